package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinels every store caller branches on. Driver errors are translated into these in one
// place (TranslateError) so core never inspects SQLSTATE codes itself.
var (
	// ErrNotFound: the query matched no row (pgx.ErrNoRows).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique or primary-key constraint refused the write (23505). The
	// constraint's name is available through ConstraintName.
	ErrConflict = errors.New("store: conflict")
	// ErrForeignKey: a referenced row is missing, or a referencing row still exists (23503).
	ErrForeignKey = errors.New("store: foreign key violation")
	// ErrCheck: a CHECK or NOT NULL constraint refused the row (23514, 23502).
	ErrCheck = errors.New("store: check violation")
	// ErrSerialization: the transaction lost a serialization race (40001, or a PostgreSQL
	// deadlock 40P01). ExecuteTx retries these; callers outside it may retry too.
	ErrSerialization = errors.New("store: serialization failure")
	// ErrUnavailable: the database could not be reached or gave up on the statement for a
	// reason of its own, not of the request: connection refused or lost, the pool could not
	// hand out a connection in time, the server is shutting down or starting (57P01-57P03),
	// out of connections or resources (class 53), or a transaction that kept losing
	// serialization races past its retry budget. Nothing was committed: retrying is safe.
	ErrUnavailable = errors.New("store: database unavailable")
	// ErrCommitUnknown: the connection broke after COMMIT was sent and before its answer came,
	// so the transaction may or may not have committed (CockroachDB says so itself with 40003
	// or an ambiguous-result error). A retry is safe only where the write is idempotent (an
	// idempotency key); ErrCommitUnknown matches ErrUnavailable too.
	ErrCommitUnknown = errors.New("store: commit outcome unknown")
	// ErrLeaseLost: the work item's lease epoch moved (another holder claimed it), so the
	// caller must write nothing.
	ErrLeaseLost = errors.New("store: lease lost")
)

// SQLSTATE codes the translation understands.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeCheckViolation       = "23514"
	codeNotNullViolation     = "23502"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeStatementUnknown     = "40003" // statement_completion_unknown (CockroachDB's ambiguous result)
)

// unavailableStates are SQLSTATEs (or their two-character classes) of a server that cannot
// serve now, whatever the request: a retry later can succeed.
var unavailableStates = map[string]bool{
	"08":    true, // connection exception
	"53":    true, // insufficient resources (too_many_connections 53300, out of memory, disk full)
	"57P01": true, // admin_shutdown (pg_terminate_backend, a fast shutdown)
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now (starting up, shutting down, in recovery)
	"57P05": true, // idle_session_timeout
	"58000": true, // system_error
	"58030": true, // io_error
}

// classified is a database fault translated into ErrUnavailable or ErrCommitUnknown, keeping
// the driver error in the chain.
type classified struct {
	kind error
	err  error
}

func (e *classified) Error() string        { return e.kind.Error() + ": " + e.err.Error() }
func (e *classified) Unwrap() error        { return e.err }
func (e *classified) Is(target error) bool { return target == e.kind || target == ErrUnavailable }

// unavailable wraps err as ErrUnavailable.
func unavailable(err error) error { return &classified{kind: ErrUnavailable, err: err} }

// commitUnknown wraps err as ErrCommitUnknown.
func commitUnknown(err error) error { return &classified{kind: ErrCommitUnknown, err: err} }

// isConnectionFault reports whether err says the database (or the way to it) failed, rather
// than the statement: the server's own "cannot serve" SQLSTATEs, and client-side errors of a
// connection that could not be made, broke, or could not be had from the pool in time.
func isConnectionFault(err error) bool {
	if code := sqlState(err); code != "" {
		return unavailableStates[code] || (len(code) == 5 && unavailableStates[code[:2]])
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	}
	// pgconn reports a connection that died under a statement with these texts only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "conn busy") ||
		strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection reset")
}

// ConstraintError is a constraint violation translated into a sentinel. It names the constraint
// and table but never carries the server's DETAIL text, which quotes the offending values (a
// token or key could be among them).
type ConstraintError struct {
	// Kind is ErrConflict, ErrForeignKey or ErrCheck.
	Kind error
	// Constraint is the violated constraint's name (for example "load_balancers_name_key").
	Constraint string
	// Table is the table the constraint belongs to, when the server reports it.
	Table string
	// Err is the driver error.
	Err error
}

// Error names the sentinel and the constraint.
func (e *ConstraintError) Error() string {
	if e.Constraint == "" {
		return e.Kind.Error()
	}
	return fmt.Sprintf("%s on constraint %q", e.Kind.Error(), e.Constraint)
}

// Is lets errors.Is(err, ErrConflict) (or the other kinds) match.
func (e *ConstraintError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the driver error.
func (e *ConstraintError) Unwrap() error { return e.Err }

// TranslateError maps a driver error onto the store sentinels, keeping the original in the
// chain: a translated serialization failure still exposes its SQLSTATE, so a retry loop that
// looks for 40001 (ExecuteTx, crdb) keeps working on translated errors. nil stays nil and
// errors the store does not know pass through unchanged.
func TranslateError(err error) error {
	if err == nil || alreadyTranslated(err) {
		return err
	}
	var maxRetries *crdb.MaxRetriesExceededError
	var ambiguous *crdb.AmbiguousCommitError
	switch {
	case errors.As(err, &ambiguous), sqlState(err) == codeStatementUnknown:
		return commitUnknown(err)
	case errors.As(err, &maxRetries):
		// A transaction that kept losing serialization races: nothing committed, and the
		// contention may pass; the caller sees UNAVAILABLE, not INTERNAL.
		return unavailable(fmt.Errorf("%w: %w", ErrSerialization, err))
	case errors.Is(err, context.Canceled):
		// The caller went away: not a database fault, and nobody reads the answer.
		return err
	case isConnectionFault(err):
		return unavailable(err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case codeUniqueViolation:
		return &ConstraintError{Kind: ErrConflict, Constraint: pgErr.ConstraintName, Table: pgErr.TableName, Err: err}
	case codeForeignKeyViolation:
		return &ConstraintError{Kind: ErrForeignKey, Constraint: pgErr.ConstraintName, Table: pgErr.TableName, Err: err}
	case codeCheckViolation, codeNotNullViolation:
		return &ConstraintError{Kind: ErrCheck, Constraint: pgErr.ConstraintName, Table: pgErr.TableName, Err: err}
	case codeSerializationFailure, codeDeadlockDetected:
		return fmt.Errorf("%w: %w", ErrSerialization, err)
	}
	return err
}

// alreadyTranslated reports whether err went through TranslateError, so translating twice
// (a query helper inside ExecuteTx, then ExecuteTx itself) does not wrap twice.
func alreadyTranslated(err error) bool {
	var ce *ConstraintError
	var cl *classified
	return errors.As(err, &ce) || errors.As(err, &cl) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrSerialization)
}

// ConstraintName returns the name of the constraint a translated (or raw driver) constraint
// violation names, or "" when err is not one.
func ConstraintName(err error) string {
	var ce *ConstraintError
	if errors.As(err, &ce) {
		return ce.Constraint
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// conflictFields are the unique constraints that guard something the caller chooses, with the
// request field a violation is about: a taken name is the caller's bad input on "name", a taken
// BMC address on "bmc.address", a tenant id taken (or taken up to case) on "tenantId". A unique
// constraint not listed guards a key the server makes (a generated id, a token's hash, one
// substrate per pool): its violation is the server's fault, never the caller's input.
// TestEveryUniqueConstraintClassified keeps this list and the migrated schema in step.
var conflictFields = map[string]string{
	"load_balancers_live_name":             "name",
	"networks_tenant_id_name_key":          "name",
	"pools_tenant_id_name_key":             "name",
	"projects_tenant_id_name_key":          "name",
	"provider_accounts_tenant_id_name_key": "name",
	MetalNodeNameKey:                       "name",
	MetalNodeBMCKey:                        "bmc.address",
	"substrate_nodes_name_key":             "nodeName",
	"tenants_pkey":                         "tenantId",
	"tenants_id_fold":                      "tenantId",
	"idempotency_keys_pkey":                "idempotencyKey",
}

// ConflictField returns the request field that err, a unique-constraint violation (ErrConflict),
// is about, by the violated constraint's name. ok is false when err is no conflict, or a conflict
// on a constraint that guards a key the server makes (see conflictFields).
func ConflictField(err error) (field string, ok bool) {
	if !errors.Is(err, ErrConflict) {
		return "", false
	}
	field, ok = conflictFields[ConstraintName(err)]
	return field, ok
}

// sqlState returns err's SQLSTATE, or "" when it carries none.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
