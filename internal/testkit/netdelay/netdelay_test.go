package netdelay

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestRoundTripPaysTheDelayTwice: an echo through the proxy takes at
// least two one-way delays, and what was sent arrives whole and in order,
// also when two messages are sent before the first answer is read. (Only
// lower bounds are checked: a loaded machine may take longer.)
func TestRoundTripPaysTheDelayTwice(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	const oneWay = 20 * time.Millisecond
	p, err := Start("tcp", echo.Addr().String(), oneWay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	began := time.Now()
	c.Write([]byte("one\n"))
	if line, err := r.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	if d := time.Since(began); d < 2*oneWay {
		t.Errorf("a round trip took %v, less than two delays of %v", d, oneWay)
	}
	began = time.Now()
	c.Write([]byte("two\n"))
	c.Write([]byte("three\n"))
	for _, want := range []string{"two\n", "three\n"} {
		if line, err := r.ReadString('\n'); err != nil || line != want {
			t.Fatalf("echo: %q, %v; want %q", line, err, want)
		}
	}
	if d := time.Since(began); d < 2*oneWay {
		t.Errorf("two pipelined messages took %v, less than a round trip", d)
	}
}
