package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
)

// ReadRequired is Read, except that an unset environment variable is an
// error: a process handed this secret (an upstream's header, a stdio
// upstream's or a command hook's environment) would otherwise run without
// it and fail obscurely.
func (s TokenSource) ReadRequired() (string, error) {
	if _, ok := os.LookupEnv(s.Env); s.Env != "" && !ok {
		return "", fmt.Errorf("environment variable %s is not set", s.Env)
	}
	return s.Read()
}

// ReadEnv reads vars now (ReadRequired), in name order, as NAME=value
// lines of a process's environment. On failure it names the variable that
// could not be read (never a value).
func ReadEnv(vars map[string]TokenSource) (env []string, failed string, err error) {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v, err := vars[name].ReadRequired()
		if err != nil {
			return nil, name, err
		}
		env = append(env, name+"="+v)
	}
	return env, "", nil
}
