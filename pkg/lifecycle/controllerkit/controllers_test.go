package controllerkit

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

type countingRunner struct{ ran, stopped *atomic.Int32 }

func (r countingRunner) Run(ctx context.Context) {
	r.ran.Add(1)
	<-ctx.Done()
	r.stopped.Add(1)
}

func TestRunControllersRunsEachUntilTheContextEnds(t *testing.T) {
	var ran, stopped atomic.Int32
	build := func(*Deps) (countingRunner, error) { return countingRunner{&ran, &stopped}, nil }
	table := []Controller{{Name: "a", New: As(build)}, {Name: "b", New: As(build)}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- RunControllers(ctx, NewDeps(fake.NewClientset(), nil, nil, nil), table) }()
	for deadline := time.Now().Add(30 * time.Second); ran.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 controllers ran", ran.Load())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if stopped.Load() != 2 {
		t.Fatalf("RunControllers returned with %d of 2 controllers stopped", stopped.Load())
	}
}

func TestRunControllersNamesTheOneThatCannotBeBuilt(t *testing.T) {
	broken := errors.New("no informer")
	table := []Controller{{Name: "broken", New: func(*Deps) (Runner, error) { return nil, broken }}}
	err := RunControllers(context.Background(), NewDeps(fake.NewClientset(), nil, nil, nil), table)
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "building the broken controller") {
		t.Fatalf("RunControllers = %v", err)
	}
}
