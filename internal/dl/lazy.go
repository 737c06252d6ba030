package dl

import (
	"fmt"
	"strings"
	"sync"
)

// Table is a library's functions as internal/lib/<name>/zcalls.go declares
// them (the generator's lib backend): what a Lazy resolves when it opens
// the library.
type Table struct {
	// Symbols are the functions' C names and the entries their addresses
	// go into. An entry the library lacks stays 0: the generated function
	// then returns its package's Missing, and only the calls that need it
	// fail.
	Symbols []Symbol
	// Required are the names without which the file is not the library:
	// where one is missing, Open fails for every call.
	Required []string
	// Bind, when not nil, runs once the symbols are resolved: it builds
	// the function values of the calls that purego.SyscallN cannot make
	// (floating-point arguments, which C takes in other registers).
	Bind func()
}

// Symbol is one function of a Table.
type Symbol struct {
	Name string   // the C name: "cufftCreate"
	Addr *uintptr // where its address goes
}

// Lazy is a library opened on first use, once per process: the search of
// Library.Open, then Table's symbols. Its zero Env is the process's.
type Lazy struct {
	Library Library
	Table   *Table
	Env     Env // for tests: the zero Env is ProcessEnv()

	once sync.Once
	path string
	err  error
}

// Open opens the library and resolves its table the first time it is
// called, and returns what that did: a *NotFoundError where no candidate
// loads, an error naming the required functions that the file opened
// lacks ("PATH is not cuFFT: it lacks cufftCreate"), or nil. Functions
// that are not required and missing leave their entries 0.
func (l *Lazy) Open() error {
	l.once.Do(l.open)
	return l.err
}

func (l *Lazy) open() {
	env := l.Env
	if env.Getenv == nil {
		env = ProcessEnv()
	}
	h, path, err := l.Library.Open(env)
	l.path = path
	if err != nil {
		l.err = err
		return
	}
	if l.Table == nil {
		return
	}
	entries := make(map[string]*uintptr, len(l.Table.Symbols))
	for _, s := range l.Table.Symbols {
		entries[s.Name] = s.Addr
	}
	// The missing ones are the required ones' business, below.
	_ = Symbols(h, path, entries)
	var lacks []string
	for _, name := range l.Table.Required {
		if p := entries[name]; p == nil || *p == 0 {
			lacks = append(lacks, name)
		}
	}
	if lacks != nil {
		l.err = fmt.Errorf("%s is not %s: it lacks %s", path, l.Library.Name, strings.Join(lacks, ", "))
		return
	}
	if l.Table.Bind != nil {
		l.Table.Bind()
	}
}

// Path returns the path of the file opened (opening it first, as Open
// does), or "" where nothing was found.
func (l *Lazy) Path() string {
	l.Open()
	return l.path
}

// Lacks says in words that the library opened has no function name, for
// the error of a call that found its entry 0: "PATH has no NAME".
func (l *Lazy) Lacks(name string) string {
	return l.Path() + " has no " + name
}
