package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

func twoTripsTable(t *testing.T) *store.DB {
	t.Helper()
	db := storetest.New(t)
	if _, err := db.Pool().Exec(context.Background(),
		`CREATE TABLE counter (id int PRIMARY KEY, v int NOT NULL); INSERT INTO counter VALUES (1, 0);
		 CREATE TABLE seen (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func counterValue(t *testing.T, db *store.DB) (v, seen int) {
	t.Helper()
	if err := db.Pool().QueryRow(context.Background(),
		`SELECT (SELECT v FROM counter WHERE id = 1), (SELECT count(*) FROM seen)`).Scan(&v, &seen); err != nil {
		t.Fatal(err)
	}
	return v, seen
}

// TestTwoTripsOutcomes: what each way a two-trip transaction can end leaves behind. A write among
// the reads (a booking) is undone whenever the transaction does not commit, and the pool's
// connections come back out of any transaction (more runs than the pool holds connections).
func TestTwoTripsOutcomes(t *testing.T) {
	t.Parallel()
	decideErr := errors.New("decided no")
	cases := []struct {
		name      string
		writes    func(w *store.Writes)
		decideErr error
		wantErr   error
		wantV     int
		wantSeen  int
	}{
		{name: "commits", writes: func(w *store.Writes) { w.Exec("seen", `INSERT INTO seen VALUES (1)`) }, wantV: 1, wantSeen: 1},
		{name: "decide refuses", decideErr: decideErr, wantErr: decideErr},
		{name: "a write before COMMIT fails at the server", writes: func(w *store.Writes) {
			w.Exec("seen", `INSERT INTO seen VALUES (7)`)
			w.Exec("seen again", `INSERT INTO seen VALUES (7)`)
		}, wantErr: store.ErrConflict},
		{name: "a client-judged write cannot ride with COMMIT", writes: func(w *store.Writes) {
			w.ExecChecked("checked", `INSERT INTO seen VALUES (9)`)
		}, wantErr: errors.New("any")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := twoTripsTable(t)
			for range 40 { // more than the pool's connections: none may be left inside a transaction
				before, _ := counterValue(t, db)
				var booked int64
				err := store.ExecuteTwoTrips(context.Background(), db,
					func(r *store.Reads) { r.ReadAffected(&booked, `UPDATE counter SET v = v + 1 WHERE id = 1`) },
					func() (*store.Writes, error) {
						if booked != 1 {
							t.Fatalf("booked %d rows", booked)
						}
						if tc.decideErr != nil {
							return nil, tc.decideErr
						}
						var w store.Writes
						tc.writes(&w)
						return &w, nil
					})
				switch {
				case tc.wantErr == nil && err != nil:
					t.Fatalf("ExecuteTwoTrips: %v", err)
				case tc.wantErr != nil && err == nil:
					t.Fatal("ExecuteTwoTrips succeeded")
				case tc.wantErr != nil && tc.wantErr.Error() != "any" && !errors.Is(err, tc.wantErr):
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				v, seen := counterValue(t, db)
				if tc.wantErr != nil && v != before {
					t.Fatalf("the booking survived a transaction that did not commit: %d -> %d", before, v)
				}
				if tc.wantErr == nil {
					if v != before+1 || seen != tc.wantSeen {
						t.Fatalf("v %d -> %d, seen %d; want +1 and %d", before, v, seen, tc.wantSeen)
					}
					if _, err := db.Pool().Exec(context.Background(), `DELETE FROM seen`); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestTwoTripsRetriesLostRaces: read-modify-write increments from many clients, each read in the
// first round trip and written in the second. A lost update would show as a smaller total; the
// losers of each race must be run again, so every increment lands once.
func TestTwoTripsRetriesLostRaces(t *testing.T) {
	t.Parallel()
	db := twoTripsTable(t)
	const clients, each = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var v int
				var found error
				errs <- store.ExecuteTwoTrips(context.Background(), db,
					func(r *store.Reads) { r.ReadInt(&v, &found, `SELECT v FROM counter WHERE id = 1`) },
					func() (*store.Writes, error) {
						if found != nil {
							return nil, found
						}
						var w store.Writes
						w.Exec("increment", `UPDATE counter SET v = $1 WHERE id = 1`, v+1)
						return &w, nil
					})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("ExecuteTwoTrips: %v", err)
		}
	}
	if v, _ := counterValue(t, db); v != clients*each {
		t.Fatalf("counter %d, want %d: an increment was lost or doubled", v, clients*each)
	}
}

// TestTwoTripsReadsNotFound: a row that does not exist is ErrNotFound in the caller's value, not
// a failed transaction.
func TestTwoTripsReadsNotFound(t *testing.T) {
	t.Parallel()
	db := twoTripsTable(t)
	var v int
	found := errors.New("unset")
	err := store.ExecuteTwoTrips(context.Background(), db,
		func(r *store.Reads) { r.ReadInt(&v, &found, `SELECT v FROM counter WHERE id = 2`) },
		func() (*store.Writes, error) { return nil, nil })
	if err != nil || !errors.Is(found, store.ErrNotFound) {
		t.Fatalf("err %v, found %v; want nil and ErrNotFound", err, found)
	}
}
