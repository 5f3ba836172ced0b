package storetest

// Rows is what a query of a test answers (store.Querier's Query), read row by row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// CollectRows reads every row of rows with scan and closes them.
func CollectRows[T any](rows Rows, scan func(Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
