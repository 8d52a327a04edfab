package controllerkit

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
)

// Runner is a controller built and ready to run until its context ends.
type Runner interface{ Run(ctx context.Context) }

// Controller is one entry of a binary's table of controllers: its name (in logs) and how it is
// built from the shared clients and informers.
type Controller struct {
	Name string
	New  func(*Deps) (Runner, error)
}

// As adapts a controller package's New to the table.
func As[C Runner](newFn func(*Deps) (C, error)) func(*Deps) (Runner, error) {
	return func(d *Deps) (Runner, error) { return newFn(d) }
}

// RunControllers builds every controller of the table over d, starts d's informers, runs the
// controllers until ctx is done and returns once each has stopped. Both binaries (the
// butler-apiserver's controllers and butler-localprovider) run their tables with it.
func RunControllers(ctx context.Context, d *Deps, table []Controller) error {
	logger := klog.FromContext(ctx)
	runners := make([]Runner, 0, len(table))
	for _, c := range table {
		r, err := c.New(d)
		if err != nil {
			return fmt.Errorf("building the %s controller: %w", c.Name, err)
		}
		runners = append(runners, r)
	}
	d.Start(ctx.Done())
	defer d.Shutdown()
	logger.Info("Running", "controllers", len(runners))
	var wg sync.WaitGroup
	for i, r := range runners {
		wg.Go(func() { r.Run(klog.NewContext(ctx, logger.WithValues("controller", table[i].Name))) })
	}
	wg.Wait()
	logger.Info("Stopped")
	return nil
}
