package store

import (
	"errors"
	"fmt"

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
)

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
	return errors.As(err, &ce) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrSerialization)
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

// sqlState returns err's SQLSTATE, or "" when it carries none.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
