package sim

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"strconv"

	"github.com/anvil-llm/anvil/router/decisionlog"
	intentfile "github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/scenarios"
)

// intentPath is the virtual router's intent_file, in the run's in-memory file system.
const intentPath = "/var/lib/anvil/intent.json"

// hasRestart reports whether the scenario restarts the router: only then does the rendered router
// configuration carry an intent file.
func hasRestart(sc *scenarios.Scenario) bool {
	for _, e := range sc.Events {
		if e.Action == scenarios.ActionRestart {
			return true
		}
	}
	return false
}

// openIntent is the server's start-up step for intent_file: read the file once, validate it, restore
// every configured scope it names, then check the directory takes a write. Without intent_file the
// router keeps intent in memory only, and a restart forgets it.
func (w *world) openIntent() (intentfile.Restored, error) {
	w.intentStore = nil
	p := w.cfg.IntentFile()
	if p == "" {
		return intentfile.Restored{}, nil
	}
	store, doc, err := intentfile.Load(&w.files, p)
	if err != nil {
		return intentfile.Restored{}, err
	}
	restored, err := intentfile.Restore(w.router.Admission(), doc)
	if err != nil {
		return restored, err
	}
	if err := store.Check(); err != nil {
		return restored, err
	}
	w.intentStore = store
	return restored, nil
}

// saveIntent persists admission's quiesce state after a quiesce or readmit, as the server's
// transition handler does.
func (w *world) saveIntent() error {
	if w.intentStore == nil {
		return nil
	}
	return w.intentStore.Save(func() intentfile.Document { return intentfile.FromSnapshots(w.router.Admission().Snapshots()) })
}

// restart is a router restart on virtual time. The old process dies: every request in flight is
// cut as its client sees a dying router (a transport failure before the first byte, a truncated
// stream after), the members abort the work, requests waiting in the admission queue are refused as
// at a shutdown, and waiting drains end with their connections. The new process builds fresh
// admission, passive health, a fresh pressure cache and readiness, probes every member before
// serving, and restores the intent the old one persisted. The operator's intent (the sim's
// own book) is unchanged, so a restart that loses intent is audited as a scope violation.
func (w *world) restart() error {
	r := Restart{At: w.now}
	// Requests waiting in the admission queue end first (a release below must not admit one into the
	// dying process), refused as the server refuses them when a shutdown cuts its queue: they held
	// nothing, and their callers come back after Retry-After.
	waiting := w.queue
	w.queue = nil
	for _, q := range waiting {
		err := w.attempts.get(w.reqs[q.id].attempt).ShutDown(q.tier, w.at(w.now))
		w.admitted(int(q.id), routing.Target{}, err, q.shape)
		r.Cut++
	}
	for id := range w.reqs {
		if w.reqs[id].active {
			w.end(id, decisionlog.EndCut)
			r.Cut++
		}
	}
	for _, d := range w.drains {
		if !d.done {
			d.done, d.Aborted, d.End = true, true, w.now
		}
	}
	snap := w.adm.Snapshot()
	w.carried.acquired += snap.Acquired
	w.carried.released += snap.Released
	w.carried.misuse += snap.ReleaseMisuse

	var source routing.PressureSource
	if w.press != nil {
		gen := w.press.gen + 1
		busy := w.press.workers
		var err error
		if w.press, err = newTelemetry(w, routing.PressureSpecs(w.cfg)); err != nil {
			return err
		}
		w.press.gen = gen // scrapes of the old process complete into nothing
		for i := range busy {
			if busy[i].busy {
				w.res.Telemetry.WorkerBusy[i] += w.now - busy[i].since
			}
		}
		source = w.press
	}
	var err error
	// The new process loads the file as it is now: after reloads, the generation in force.
	if w.router, err = routing.New(w.cfg, w.readinessSource(), source, w.router.Decisions(), w.routerOptions()...); err != nil {
		return err
	}
	w.sick = 0 // the new process starts with every member healthy
	w.adm, _ = w.router.Admission().Tier(w.tier.ID)
	w.ready = newReadiness(w.tier, w.sc.AllMembers())
	w.refreshReadiness()

	restored, err := w.openIntent()
	r.RestoredTiers, r.RestoredMembers, r.Ignored = restored.Tiers, restored.Members, len(restored.Ignored)
	w.res.Restarts = append(w.res.Restarts, r)
	return err
}

// memFS is the run's in-memory file system for the intent file: no I/O leaves the simulation.
type memFS struct {
	files map[string][]byte
	temps int
}

func (m *memFS) Open(name string) (io.ReadCloser, error) {
	b, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memFS) CreateTemp(dir, pattern string) (intentfile.File, error) {
	if m.files == nil {
		m.files = map[string][]byte{}
	}
	m.temps++
	name := path.Join(dir, pattern[:len(pattern)-1]+strconv.Itoa(m.temps))
	m.files[name] = nil
	return &memFile{fs: m, name: name}, nil
}

func (m *memFS) Rename(oldpath, newpath string) error {
	b, ok := m.files[oldpath]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	delete(m.files, oldpath)
	m.files[newpath] = b
	return nil
}

func (m *memFS) Remove(name string) error {
	delete(m.files, name)
	return nil
}

func (m *memFS) SyncDir(string) error { return nil }

type memFile struct {
	fs   *memFS
	name string
	buf  bytes.Buffer
}

func (f *memFile) Write(p []byte) (int, error) { return f.buf.Write(p) }
func (f *memFile) Name() string                { return f.name }
func (f *memFile) Sync() error                 { return nil }

func (f *memFile) Close() error {
	f.fs.files[f.name] = bytes.Clone(f.buf.Bytes())
	return nil
}
