package storage

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// A Database answers the trigger, routine and event interfaces with nothing
// and refuses to store any (go-mysql-server's privileged wrapper calls them
// once accounts are enabled); views it keeps in memory.
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
	if err := db.CreateView(ctx, "v", "SELECT 1", "CREATE VIEW v AS SELECT 1"); err != nil {
		t.Errorf("CreateView: %v", err)
	}
	if v, ok, _ := db.GetViewDefinition(ctx, "V"); !ok || v.TextDefinition != "SELECT 1" {
		t.Errorf("GetViewDefinition after create: %+v %v", v, ok)
	}
	if err := db.CreateView(ctx, "v", "SELECT 2", "CREATE VIEW v AS SELECT 2"); !sql.ErrExistingView.Is(err) {
		t.Errorf("second CreateView: %v", err)
	}
	if err := db.DropView(ctx, "v"); err != nil {
		t.Errorf("DropView: %v", err)
	}
	if err := db.DropView(ctx, "v"); !sql.ErrViewDoesNotExist.Is(err) {
		t.Errorf("second DropView: %v", err)
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
