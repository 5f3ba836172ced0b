// Package store is the control plane's database seam, and the only package that names the
// driver (pgx): the connection pool, the embedded schema migrations, transactions with retries,
// the translation of driver errors into sentinels, the queries of every entity and the
// lease-based work queue the reconcilers share. TestOnlyStoreImportsTheDriver keeps it so.
//
// Every statement must run on CockroachDB (production) and PostgreSQL (tests): no advisory
// locks, no LISTEN/NOTIFY, no sequences for ordering, no PL/pgSQL.
//
// # One calling convention
//
// Every operation on data is a package function whose arguments are ctx, then what it runs on,
// then its own:
//
//   - q Querier: its statements run on the caller's transaction (a Tx) or, for a lone read, on
//     the pool (DB.Q). store.GetLoadBalancer(ctx, tx, id).
//   - tx Tx: it needs a transaction (it sends a batch, or its statements only make sense
//     together). store.Enqueue(ctx, tx, kind, id, nil).
//   - db *DB: it runs transactions of its own (the work queue's claim and fenced writes, the
//     provider budgets and lists). store.Claim(ctx, db, params).
//
// Why functions and not methods of the handle: most of the package was already written so (the
// smallest change), a function states in its signature whether it joins the caller's
// transaction or opens its own, and one transaction can call the functions of several entities
// without a handle per entity. The methods of DB are the handle's own lifecycle only (Ping,
// Close, Migrate, SchemaCurrent, Q).
//
// The one other form is the two-trip transaction's batch (ExecuteTwoTrips): a method of Reads
// or Writes queues the statement of the function of the same name instead of running it
// (r.Pool(id, &pool, &found) queues GetPool; w.AppendEvent(e) queues AppendEvent), and its
// answer arrives when the batch is sent.
//
// # Files
//
// The engine (no entity in it):
//   - db.go, conn.go, tracer.go, querier.go: the pool, lone connections, the tracer seam, Tx
//     and Querier with the scanning helpers;
//   - tx.go: ExecuteTx and ExecuteLockedTx (crdb retries, READ COMMITTED with locks);
//   - tx_twotrips.go, tx_writes.go, tx_fuse.go: the two-trip transaction, its write batch
//     (DryRun), and the fusing of a batch's inserts into one statement;
//   - errors.go: driver errors as sentinels; lockorder.go: the one lock order;
//   - migrate.go, schema_version.go, pages.go, metrics.go.
//
// One file set per entity:
//   - load balancers: loadbalancers.go;
//   - tenancy: tenancy.go (tenants, principals, tokens, projects), bootstrap.go (the platform
//     admin); pools.go (accounts, pools, quotas), quota_booking.go, quota_reservations.go;
//   - networks and certificates: networks.go (networks, subnets), certificates.go,
//     instances.go;
//   - metal: metal.go; substrates: substrates.go;
//   - events: events.go, events_feed.go, events_ordering.go; usage.go (metering);
//   - idempotency: idempotency.go;
//   - work queue: workqueue.go (items, leases, fenced writes), workqueue_unqueued.go,
//     workqueue_settled.go, workqueue_retention.go; budget.go and provider_lists.go (the
//     provider's rate budgets and the per-account lists the reconcilers share).
package store
