package sources

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Default limits; see Options.
const (
	DefaultMaxReadBytes  = 1 << 20 // 1 MiB per page
	DefaultMaxFileBytes  = 1 << 30 // 1 GiB per file
	DefaultMaxListLimit  = 1000    // files per List page
	DefaultMaxAccessLog  = 10000   // records kept per Context
	maxManifestBytes     = 64 << 20
	maxContextIDLen      = 256
	maxRecordedStringLen = 1024 // pool ids and paths as kept in an AccessRecord
)

// Options tunes a Registry. A nil *Options or a zero field means the default.
type Options struct {
	MaxReadBytes int64 // most bytes one Read returns; default 1 MiB
	MaxFileBytes int64 // largest file Read or Verify will hash; default 1 GiB
	// MaxDigestBytes bounds the chunk digests kept for verified file
	// versions (least recently used dropped first); default 16 MiB. A file
	// whose digests do not fit is verified whole on every page.
	MaxDigestBytes int64
	MaxListLimit   int              // most files one List page returns; default 1000
	MaxAccessLog   int              // AccessRecords kept per Context (oldest dropped, counts stay exact); default 10,000
	Now            func() time.Time // clock for AccessRecords; default time.Now
}

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxReadBytes < 0 || out.MaxFileBytes < 0 || out.MaxListLimit < 0 || out.MaxAccessLog < 0 || out.MaxDigestBytes < 0 {
		return out, fmt.Errorf("negative limit: %w", ErrInvalidOptions)
	}
	if out.MaxReadBytes == 0 {
		out.MaxReadBytes = DefaultMaxReadBytes
	}
	if out.MaxFileBytes == 0 {
		out.MaxFileBytes = DefaultMaxFileBytes
	}
	if out.MaxDigestBytes == 0 {
		out.MaxDigestBytes = DefaultMaxDigestBytes
	}
	if out.MaxListLimit == 0 {
		out.MaxListLimit = DefaultMaxListLimit
	}
	if out.MaxAccessLog == 0 {
		out.MaxAccessLog = DefaultMaxAccessLog
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out, nil
}

// pool is one opened pool. Everything in it is fixed after OpenRegistry.
type pool struct {
	cfg      PoolConfig
	trust    Trust
	root     *os.Root
	manifest *Manifest
	bytes    int64 // sum of known entry sizes
	output   bool  // a run's published outputs (AddPool), not configured
}

// Registry holds every configured pool, opened, and the derived pools added
// since (a pipeline run's outputs, [Registry.AddPool]). It is safe for
// concurrent use; a pool never changes once added.
type Registry struct {
	opts   Options
	mu     sync.RWMutex
	pools  map[string]*pool // configured and derived
	ids    []string         // the configured ones, sorted
	closed atomic.Bool

	// digests holds the chunk digests of file versions verified whole, so
	// that later pages re-hash only their own chunks (read.go).
	digests *digestCache
	// hashed counts the file bytes Read has hashed, whole-file checks and
	// chunk checks alike: what makes paging O(page) observable
	// (TestPageHashesOnlyItsChunks).
	hashed atomic.Int64
}

// ErrPoolExists is returned by AddPool for an id already taken by another
// directory.
var ErrPoolExists = errors.New("a pool with that id exists")

// AddPool opens a derived pool (a run's published outputs) and makes it
// bindable. Adding the same id and directory again is a no-op, so every
// process serving a context can add what the store says it holds.
func (r *Registry) AddPool(cfg PoolConfig) error {
	if r.closed.Load() {
		return ErrClosed
	}
	r.mu.RLock()
	old, ok := r.pools[cfg.ID]
	r.mu.RUnlock()
	if ok {
		if old.cfg.Path == cfg.Path {
			return nil
		}
		return fmt.Errorf("pool %q: %w", cfg.ID, ErrPoolExists)
	}
	p, err := openPool(cfg)
	if err != nil {
		return err
	}
	p.output = true
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.pools[cfg.ID]; ok { // raced with another AddPool
		p.root.Close()
		if old.cfg.Path == cfg.Path {
			return nil
		}
		return fmt.Errorf("pool %q: %w", cfg.ID, ErrPoolExists)
	}
	r.pools[cfg.ID] = p
	return nil
}

// Has reports whether a pool with this id is open (configured or derived).
func (r *Registry) Has(id string) bool {
	_, ok := r.lookup(id)
	return ok
}

// lookup returns a pool by id.
func (r *Registry) lookup(id string) (*pool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.pools[id]
	return p, ok
}

// OpenRegistry validates each config, opens each pool directory with
// os.OpenRoot and loads its manifest. Pool paths must be absolute (the config
// loader resolves them). It fails on the first bad pool and closes what it
// opened.
func OpenRegistry(cfgs []PoolConfig, opts *Options) (*Registry, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Registry{opts: o, pools: make(map[string]*pool, len(cfgs)), digests: newDigestCache(o.MaxDigestBytes)}
	for _, cfg := range cfgs {
		if _, dup := r.pools[cfg.ID]; dup {
			r.Close()
			return nil, fmt.Errorf("pool %q: %w", cfg.ID, ErrDuplicatePool)
		}
		p, err := openPool(cfg)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.pools[cfg.ID] = p
		r.ids = append(r.ids, cfg.ID)
	}
	slices.Sort(r.ids)
	return r, nil
}

func openPool(cfg PoolConfig) (*pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(cfg.Path) {
		return nil, fmt.Errorf("pool %q: path %q is not absolute: %w", cfg.ID, cfg.Path, ErrInvalidPool)
	}
	root, err := os.OpenRoot(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("pool %q: opening directory: %w", cfg.ID, err)
	}
	learnRootEscape(root)
	m, err := loadManifest(root, cfg.Manifest)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("pool %q: %w", cfg.ID, err)
	}
	p := &pool{cfg: cfg, trust: cfg.Trust.effective(), root: root}
	// Record sizes as found now, through the root, for List and PoolInfo.
	// A file that is missing or escapes keeps Size -1; Read and Verify
	// report it properly later.
	entries := m.entries
	for i := range entries {
		entries[i].Size = -1
		if info, err := root.Stat(entries[i].Path); err == nil && info.Mode().IsRegular() {
			entries[i].Size = info.Size()
			p.bytes += info.Size()
		}
	}
	p.manifest = m // freshly parsed and not shared, so filling sizes in place is safe
	return p, nil
}

// loadManifest reads a pool's manifest: a relative name through the pool's
// root (so it cannot leave the pool), an absolute one from the host.
func loadManifest(root *os.Root, name string) (*Manifest, error) {
	if name == "" {
		name = DefaultManifestName
	}
	var (
		f   *os.File
		err error
	)
	if filepath.IsAbs(name) {
		f, err = openHostRegular(name)
	} else {
		f, _, err = openRegular(root, name, maxManifestBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("opening manifest %q: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading manifest %q: %w", name, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("manifest %q over %d bytes: %w", name, maxManifestBytes, ErrManifestTooLarge)
	}
	m, err := ParseManifest(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("manifest %q: %w", name, err)
	}
	return m, nil
}

// Close closes every pool's root. Contexts bound from the registry refuse
// further reads with UNAVAILABLE.
func (r *Registry) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	var errs []error
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.pools {
		errs = append(errs, p.root.Close())
	}
	return errors.Join(errs...)
}

// IDs returns the configured pool ids, sorted.
func (r *Registry) IDs() []string { return slices.Clone(r.ids) }

// Info describes every configured pool, sorted by id, with Integrity
// "unverified" (integrity state belongs to a Context).
func (r *Registry) Info() []PoolInfo {
	out := make([]PoolInfo, 0, len(r.ids))
	for _, id := range r.ids {
		p, _ := r.lookup(id)
		out = append(out, p.info(IntegrityUnverified))
	}
	return out
}

func (p *pool) info(integrity string) PoolInfo {
	return PoolInfo{
		ID:          p.cfg.ID,
		Description: p.cfg.Description,
		Trust:       p.trust,
		Files:       p.manifest.Len(),
		Bytes:       p.bytes,
		Integrity:   integrity,
		Output:      p.output,
		Readers:     slices.Clone(p.cfg.Readers),
	}
}

// VerifyReport is the integrity check of one pool.
type VerifyReport struct {
	PoolID string
	Files  int // manifest entries checked
	// Names are the manifest's file names, sorted: exactly what a sandboxed
	// pipeline is given of the pool (no file beside them).
	Names    []string
	OK       bool
	Problems []Problem

	// versions are the file versions that matched, keyed by name: what
	// [Context.VerifyUnchanged] holds a later look against.
	versions map[string]versionKey
}

// Problem is one file that failed verification. Kind is one of the Problem*
// constants; Detail is operator text and may hold host paths.
type Problem struct {
	Path   string
	Kind   string
	Detail string
}

// Verify hashes every manifest entry of every pool through the pool's root,
// sorted by pool id. Files on disk that the manifest does not list are not
// reported: no Read can reach them. Verify does not change any Context's
// integrity state.
func (r *Registry) Verify() []VerifyReport {
	out := make([]VerifyReport, 0, len(r.ids))
	for _, id := range r.ids {
		p, _ := r.lookup(id)
		out = append(out, p.verify(r.opts.MaxFileBytes, r.closed.Load()))
	}
	return out
}

func (p *pool) verify(maxBytes int64, closed bool) VerifyReport {
	rep := VerifyReport{PoolID: p.cfg.ID, Files: p.manifest.Len()}
	for _, e := range p.manifest.entries {
		rep.Names = append(rep.Names, e.Path)
		if closed {
			rep.Problems = append(rep.Problems, Problem{Path: e.Path, Kind: ProblemUnreadable, Detail: ErrClosed.Error()})
			continue
		}
		sum, _, info, err := hashOpen(p.root, e.Path, maxBytes)
		switch {
		case err != nil:
			rep.Problems = append(rep.Problems, Problem{Path: e.Path, Kind: problemKind(err), Detail: err.Error()})
		case sum != e.SHA256:
			rep.Problems = append(rep.Problems, Problem{Path: e.Path, Kind: ProblemMismatch,
				Detail: fmt.Sprintf("sha256 %s, manifest says %s", hex.EncodeToString(sum[:]), hex.EncodeToString(e.SHA256[:]))})
		default:
			if v, ok := versionOf(p, e.Path, info); ok {
				if rep.versions == nil {
					rep.versions = map[string]versionKey{}
				}
				rep.versions[e.Path] = v
			}
		}
	}
	rep.OK = len(rep.Problems) == 0
	return rep
}

// openHostRegular opens an operator-named absolute file, non-blocking and
// regular files only, like openRegular but without a root.
func openHostRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
