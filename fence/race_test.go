//go:build race

package fence

// raceEnabled shrinks the stress inputs: the race detector makes the
// byte loop ~40x slower, and linear-time is still evident at the smaller size.
const raceEnabled = true
