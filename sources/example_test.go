package sources_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/sources"
)

func ExampleParseManifest() {
	// sha256sum output, as `find . -type f -exec sha256sum {} +` prints it.
	const sums = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  ./greeting.txt\n" +
		"486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7 *./data/world.bin\n"
	m, err := sources.ParseManifest(strings.NewReader(sums))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range m.Entries() {
		fmt.Printf("%s %x\n", e.Path, e.SHA256[:4])
	}
	_, err = sources.ParseManifest(strings.NewReader("\nnot a manifest line\n"))
	fmt.Println(err)
	// Output:
	// data/world.bin 486ea462
	// greeting.txt 2cf24dba
	// manifest line 2: want "<64 hex digits>  <name>" or "<64 hex digits> *<name>": malformed manifest line
}

func ExampleBuildManifest() {
	dir, err := os.MkdirTemp("", "pool")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("hello"), 0o644)
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "world.bin"), []byte("world"), 0o644)

	m, err := sources.BuildManifest(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The output is what `sha256sum -c` checks; save it as SHA256SUMS.
	m.WriteTo(os.Stdout)
	// Output:
	// 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7  data/world.bin
	// 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  greeting.txt
}

func ExampleContext_Read() {
	dir, _ := os.MkdirTemp("", "pool")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("hello"), 0o644)
	m, _ := sources.BuildManifest(dir)
	f, _ := os.Create(filepath.Join(dir, sources.DefaultManifestName))
	m.WriteTo(f)
	f.Close()

	reg, err := sources.OpenRegistry([]sources.PoolConfig{{ID: "docs", Description: "greetings", Path: dir}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()
	ctx, _ := reg.Bind("session-1", []string{"docs"})

	r, err := ctx.Read("docs", "greeting.txt", 0, 0)
	fmt.Printf("%s %v %s %v\n", r.Data, r.EOF, r.Trust, err)
	_, err = ctx.Read("docs", "../etc/passwd", 0, 0)
	fmt.Println(err)
	fmt.Printf("%+v\n", ctx.Usage())
	// Output:
	// hello true untrusted <nil>
	// PATH_OUTSIDE_POOLS: path must be a canonical relative path inside pool "docs": name has a ".." element
	// {ContextID:session-1 PoolsBound:[docs] PoolsUsed:[docs] FilesAccessed:1 IntegrityVerified:true Violations:1 Accesses:2 AccessLogDropped:0}
}
