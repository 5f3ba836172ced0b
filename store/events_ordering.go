package store

// Why event cursors never skip a late commit, on PostgreSQL and on CockroachDB.
//
// The promise (docs/api.md, "Events"): a tenant's cursors follow commit order, so a reader that has
// been handed cursor c never later finds an event of that tenant numbered c or below that it did
// not see. The readers are ListEvents (one tenant) and ReadEventRanges, the read of a replica's
// shared watch reader (core/events/watchhub: many tenants, one round trip per poll interval).
//
// 1. A change never numbers its own event. It inserts a row into event_inbox in its own
//    transaction and nothing else of the event log, so a change that commits late has no number
//    yet when it commits; it gets one from the first numbering statement that sees it.
//
// 2. Numbering is one statement, sqlSequenceEvents, for one tenant or many. It locks the inbox
//    rows it takes (FOR UPDATE, waiting on, never skipping, rows another numbering holds),
//    deletes them, adds their count to each tenant's row in event_counters, and inserts them
//    into events with seqs above the counter's old value. Every statement takes inbox rows in
//    (tenant_id, created_at, id) order and counter rows in tenant_id order; all inbox locks come
//    before any counter lock (the counters need the full count). Two numberings therefore never
//    wait on each other in a cycle: one that waits on an inbox row holds no counter row, and two
//    that both hold counter rows took them in one order.
//
// 3. Two numberings that share a tenant are serialized by that tenant's counter row.
//    PostgreSQL (READ COMMITTED): the second one's upsert waits for the first to commit and then
//    updates the row as the first left it, so its seqs are above the first's and it commits
//    after it. CockroachDB (SERIALIZABLE): the two transactions write the same counter key, so
//    one is ordered entirely after the other (the later one waits on the lock, or is pushed and
//    retried with 40001, which retryEventRead reruns); the later one reads the counter the
//    earlier one wrote. On both engines: a larger seq of a tenant commits no earlier than a
//    smaller one, and the commit that makes seq n visible makes every seq below n visible too.
//
// 4. A read of events after a numbering sees everything numbered before it. ListEvents runs the
//    numbering and then the read as two implicit transactions, the read starting after the
//    numbering committed. ReadEventRanges sends both statements in one pgx batch, which both
//    engines run as one implicit transaction. PostgreSQL READ COMMITTED takes a new snapshot
//    for each statement, so the read sees the batch's own numbering and every numbering that
//    committed before the read started, including any the numbering waited for. On CockroachDB
//    the whole transaction runs at one timestamp, after every numbering whose counter write it
//    read (point 3), so the read sees them too. If the engine ran the two statements as separate
//    transactions instead, the ListEvents argument applies. Either way, the read returns, per
//    tenant, a gapless run of seqs after its cursor: by point 3, no seq below one it sees can
//    become visible later.
//
// 5. Nothing is handed out from a transaction that did not commit. ReadEventRanges returns
//    events only when the batch's Close (its commit) succeeded: seqs of a numbering that rolled
//    back would be given again to other events. A failure is rerun (serialization failures and
//    deadlocks) or reported, and the watch reader simply reads the same ranges again.
//
// 6. A late commit (point 1) is numbered by a numbering that starts after it commits, which by
//    point 3 gives it seqs above every seq any earlier numbering handed out, so above every
//    cursor any reader holds. Together with point 4: a reader that saw cursor c will see every
//    event numbered later, and no event will be numbered c or below again.
//
// Neither reader uses follower reads or AS OF SYSTEM TIME: a read in the past could miss a
// numbering committed just before it and then see a later one, which point 4 rules out. The
// shared reader polls (no LISTEN/NOTIFY, which CockroachDB does not offer); its cost is one
// transaction per poll interval per replica, whatever the number of watches or tenants.
