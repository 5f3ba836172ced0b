package store

// The lock order. Every transaction that touches a resource, its work item, its quota row and
// its events takes its row locks in this order, so that no two of them wait for each other
// (PostgreSQL breaks such a cycle only after deadlock_timeout, and one side reruns):
//
//  1. Resource rows. The row the call changes first (a load balancer FOR UPDATE), then the rows
//     it names and decides on (instances, certificates, the regional load balancers of a
//     global one, FOR SHARE). A change of a named row that must change the rows naming it too
//     locks those first (an instance delete locks the load balancers reaching it, then the
//     instance: LockLoadBalancers). Rows of one table are locked in id order.
//  2. Work items: the resource's own (Enqueue, EnqueueNew), then others', in id order
//     (EnqueueMany sorts). An Enqueue is an upsert that changes no key column, so the lock it
//     takes is FOR NO KEY UPDATE.
//  3. The quota row: the unit taken (Writes.TakeQuota, the create's last statement) or given
//     back (a reconciler's refund), after everything above.
//  4. Events: inserts into event_inbox, a table no other writer locks rows of (numbering them
//     is a transaction of its own, SequenceEvents), so they may go anywhere; they go last.
//
// The one statement outside the order is a reconciler's lease check (CheckLease), the first of
// every fenced write: it must come first, since the fenced write may decide nothing before it.
// It locks the work item FOR KEY SHARE, which the only locks other transactions take on a work
// item do not wait for: an Enqueue's FOR NO KEY UPDATE is compatible with it, and a claim's
// FOR UPDATE SKIP LOCKED skips the row instead of waiting (a claim is one statement holding
// nothing else; renewals and a holder's own fenced updates are single statements too). So no
// transaction holding a resource row can wait for a lease check, and a lease check waits only
// for a claim in flight, which waits for nothing. Before this, the check took FOR UPDATE: an
// update holding a load balancer's row waited to queue its work item while the reconciler's
// fenced write held that item and waited for the row, and PostgreSQL broke the cycle every
// time it closed.
//
// Why resource rows first: a request's transaction must read and lock the resource before it
// can decide whether there is anything to queue (an update that changes nothing queues
// nothing), so its work item can only come after; the reconcilers follow the same order after
// their lease check. Quota rows come after both because a tenant's creates share the quota
// row: held from the last statement to COMMIT only, it is never held while waiting for
// anything else.
//
// Isolation of the load balancer's update and delete. Both run as locked transactions
// (ExecuteLockedTwoTrips): READ COMMITTED on PostgreSQL, SERIALIZABLE on CockroachDB (the only
// level used there), and they keep the seed's rules on PostgreSQL for the reasons a create
// does (quota_booking.go), by their shape:
//
//   - the load balancer's row is read FOR UPDATE by the transaction's first statement: it waits
//     for a concurrent update, delete or reconciler write of the row and then returns the
//     newest committed version, which nobody changes until COMMIT. Every decision about the
//     row (not deleting, the settings merged, the state that follows, a delete asked twice) is
//     made from that version, so concurrent updates apply one after the other, none lost and
//     none aborted (under SERIALIZABLE the waiter failed with 40001 once the holder committed,
//     and reran);
//   - the rows the new settings name are read FOR SHARE after it, as a create reads them: the
//     newest versions, unchangeable until COMMIT. The rows the load balancer targets today are
//     found by statements that run after the row lock, so at READ COMMITTED they see the
//     targets of every update committed before it;
//   - a delete's "no live global load balancer targets it" is read after the row lock: a global
//     one that names it holds its row FOR SHARE until it commits, so the read sees every one
//     committed, and none can be added until the delete commits;
//   - the writes are the locked row's update, its target rows (only this row's holder writes
//     them), an event insert and the work item's upsert, which needs no read.
//
// An update that fails before its COMMIT is sent writes nothing, as under SERIALIZABLE: the
// batch carrying COMMIT is the only one with writes, so an UNAVAILABLE "nothing was changed"
// answer stays true.
