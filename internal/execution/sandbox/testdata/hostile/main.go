// Command hostile is the test suite's misbehaving pipeline. Each subcommand
// attempts one escape and reports on stdout either
//
//	BLOCKED <case>: <errno or error>   (exit 0: the sandbox held)
//	ESCAPED <case>: <what happened>    (exit 1: the sandbox failed)
//
// Cases that end by being killed (membomb, spin, flood, int80) never print
// BLOCKED; the test asserts on the Result instead.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hostile CASE [ARG]")
		os.Exit(2)
	}
	arg := ""
	if len(os.Args) > 2 {
		arg = os.Args[2]
	}
	c := os.Args[1]
	switch c {
	case "tcp":
		conn, err := net.DialTimeout("tcp", arg, 2*time.Second)
		report(c, err, func() { conn.Close() })
	case "listen":
		l, err := net.Listen("tcp", arg)
		report(c, err, func() { l.Close() })
	case "udp":
		conn, err := net.Dial("udp", arg)
		if err == nil {
			_, err = conn.Write([]byte("airlock-escape"))
		}
		report(c, err, nil)
	case "dns":
		addrs, err := net.LookupHost(arg)
		report(c, err, func() { fmt.Println("resolved", addrs) })
	case "mptcp":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262 /* IPPROTO_MPTCP */)
		if err == nil {
			err = connectInet(fd, arg)
		}
		report(c, err, nil)
	case "unix":
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: arg})
		}
		report(c, err, nil)
	case "socketpair":
		_, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		report(c, err, nil)
	case "netlink":
		_, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW, 0)
		report(c, err, nil)
	case "read":
		b, err := os.ReadFile(arg)
		report(c, err, func() { fmt.Printf("read %d bytes\n", len(b)) })
	case "list":
		_, err := os.ReadDir(arg)
		report(c, err, nil)
	case "write":
		err := os.WriteFile(arg, []byte("pwned\n"), 0o644)
		report(c, err, nil)
	case "kill":
		pid, _ := strconv.Atoi(arg)
		report(c, syscall.Kill(pid, syscall.SIGKILL), nil)
	case "unshare":
		report(c, syscall.Unshare(syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET), nil)
	case "ptrace":
		_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0)
		report(c, errOrNil(e), nil)
	case "io_uring":
		_, _, e := syscall.RawSyscall(425 /* io_uring_setup */, 8, 0, 0)
		report(c, errOrNil(e), nil)
	case "bpf":
		_, _, e := syscall.RawSyscall(321 /* bpf */, 0, 0, 0)
		report(c, errOrNil(e), nil)
	case "int80":
		// getpid through the 32-bit entry point: a filter without an arch
		// check would judge this as syscall 20 of the 64-bit table.
		r := int80(20, 0, 0, 0)
		fmt.Printf("ESCAPED int80: 32-bit getpid returned %d\n", int64(r))
		os.Exit(1)
	case "x32":
		// getpid with the x32 ABI bit: same arch as amd64, different table.
		r, _, e := syscall.RawSyscall(0x40000000+39, 0, 0, 0)
		fmt.Printf("ESCAPED x32: returned %d errno %d\n", r, e)
		os.Exit(1)
	case "ids":
		host, _ := os.Hostname()
		fmt.Printf("uid=%d euid=%d gid=%d groups=%v pid=%d host=%s\n", os.Getuid(), os.Geteuid(), os.Getgid(), mustGroups(), os.Getpid(), host)
	case "nice": // the CPU priority the pipeline was started with
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
		fmt.Printf("nice=%d err=%v\n", 20-prio, err)
	case "membomb":
		var hold [][]byte
		for i := 0; ; i++ {
			b := make([]byte, 16<<20)
			for j := range b {
				if j%4096 == 0 {
					b[j] = 1
				}
			}
			hold = append(hold, b)
			fmt.Fprintf(os.Stderr, "allocated %d MiB\n", (i+1)*16)
		}
	case "spin":
		for {
		}
	case "flood":
		buf := []byte(strings.Repeat("flood!!\n", 8192))
		for {
			if _, err := os.Stdout.Write(buf); err != nil {
				os.Exit(3)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown case", c)
		os.Exit(2)
	}
}

func report(c string, err error, onSuccess func()) {
	if err != nil {
		name := err.Error()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			name = errnoName(errno)
		}
		fmt.Printf("BLOCKED %s: %s (%v)\n", c, name, err)
		os.Exit(0)
	}
	if onSuccess != nil {
		onSuccess()
	}
	fmt.Printf("ESCAPED %s\n", c)
	os.Exit(1)
}

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.EPERM: "EPERM", syscall.EACCES: "EACCES", syscall.ENETUNREACH: "ENETUNREACH",
		syscall.EAFNOSUPPORT: "EAFNOSUPPORT", syscall.ENOENT: "ENOENT", syscall.EROFS: "EROFS",
		syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ESRCH: "ESRCH", syscall.ENOSYS: "ENOSYS", syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

func connectInet(fd int, addr string) error {
	ap, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	var sa syscall.SockaddrInet4
	copy(sa.Addr[:], ap.IP.To4())
	sa.Port = ap.Port
	return syscall.Connect(fd, &sa)
}

func mustGroups() []int {
	g, _ := os.Getgroups()
	return g
}
