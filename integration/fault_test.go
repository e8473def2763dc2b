package integration

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governed"
)

// envServeConfig makes the test binary a governed server for the
// configuration file it names (TestMain), so that a test can SIGKILL it.
const envServeConfig = "DPSQL_INTEGRATION_SERVE_CONFIG"

// serveSubprocess serves a configuration until SIGTERM/SIGINT (or SIGKILL),
// printing "listening on ADDR" on stderr once it accepts connections.
func serveSubprocess(path string) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := governed.New(governed.Options{Config: cfg, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Shutdown(5 * time.Second)
	}()
	fmt.Fprintf(os.Stderr, "listening on %s\n", s.Addr())
	if err := s.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.Shutdown(5 * time.Second)
	return 0
}
