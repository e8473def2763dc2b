package storage

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// A Database answers the view, trigger, routine and event interfaces with
// nothing and refuses to store any (go-mysql-server's privileged wrapper
// calls them once accounts are enabled).
func TestDatabaseHasNoSchemaObjects(t *testing.T) {
	db := NewDatabase("d")
	ctx := sql.NewEmptyContext()
	if _, ok, err := db.GetViewDefinition(ctx, "v"); ok || err != nil {
		t.Errorf("GetViewDefinition: %v, %v", ok, err)
	}
	if v, err := db.AllViews(ctx); len(v) != 0 || err != nil {
		t.Errorf("AllViews: %v, %v", v, err)
	}
	if tr, err := db.GetTriggers(ctx); len(tr) != 0 || err != nil {
		t.Errorf("GetTriggers: %v, %v", tr, err)
	}
	if _, ok, err := db.GetStoredProcedure(ctx, "p"); ok || err != nil {
		t.Errorf("GetStoredProcedure: %v, %v", ok, err)
	}
	if ev, _, err := db.GetEvents(ctx); len(ev) != 0 || err != nil {
		t.Errorf("GetEvents: %v, %v", ev, err)
	}
	if err := db.CreateView(ctx, "v", "SELECT 1", "CREATE VIEW v AS SELECT 1"); err == nil {
		t.Error("CreateView succeeded on a read-only database")
	}
	if err := db.CreateTrigger(ctx, sql.TriggerDefinition{Name: "t"}); err == nil {
		t.Error("CreateTrigger succeeded")
	}
	if err := db.SaveStoredProcedure(ctx, sql.StoredProcedureDetails{Name: "p"}); err == nil {
		t.Error("SaveStoredProcedure succeeded")
	}
	if _, err := db.SaveEvent(ctx, sql.EventDefinition{Name: "e"}); err == nil {
		t.Error("SaveEvent succeeded")
	}
}
