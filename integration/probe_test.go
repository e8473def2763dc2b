package integration

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestZZProbe(t *testing.T) {
	if os.Getenv("PROBE") == "" {
		t.Skip()
	}
	tg := startPlainGMS(t, plainOptions{TLS: true, View: os.Getenv("PROBE") == "view"})
	fmt.Printf("PORT %d CA %s\n", tg.Port, tg.CAFile)
	time.Sleep(20 * time.Minute)
}
