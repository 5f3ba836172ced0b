package store

import (
	"slices"
	"strings"
	"testing"
)

// sharedNumbers are the migration numbers that already stand on more than one file. Databases
// have applied those files under their names (schema_migrations records the name), so they keep
// them; no other number may be shared.
var sharedNumbers = map[string][]string{
	"0060": {"0060_platform_bootstrap.sql", "0060_provider_budgets.sql"},
	"0063": {"0063_event_request_ids.sql", "0063_quota_reservations.sql"},
	"0064": {"0064_metal_bmc_host_key.sql", "0064_provider_lists.sql", "0064_work_item_groups.sql"},
}

// TestMigrationNumbersAreUnique: a new migration takes a number no other file has, so the order
// of two steps never rests on the alphabet of their names.
func TestMigrationNumbersAreUnique(t *testing.T) {
	entries, err := embeddedMigrations.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	byNumber := map[string][]string{}
	for _, e := range entries {
		number, _, ok := strings.Cut(e.Name(), "_")
		if !ok || len(number) != 4 || strings.Trim(number, "0123456789") != "" {
			t.Errorf("migration %s: the name must start with a four-digit number and '_'", e.Name())
			continue
		}
		byNumber[number] = append(byNumber[number], e.Name())
	}
	for number, names := range byNumber {
		if len(names) == 1 {
			continue
		}
		slices.Sort(names)
		if !slices.Equal(names, sharedNumbers[number]) {
			t.Errorf("migration number %s is taken by %v: give the new file the next free number", number, names)
		}
	}
}
