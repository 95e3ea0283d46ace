// The nats.go rows of BENCHMARKS.md: the reference peer jetwire is compared with.
//
// Built in GOPATH mode against Debian's golang-github-nats-io-go-nats-dev (no module
// download) by benchmarks/natsgo_rows.py, which runs it for the timed part of a row; the
// set-up around it (streams, stored messages) and the accounting are the Python
// harness's (jetwire.cli.rows), the same for every client.
//
//	natsgo <row> <url> <n> <subject> <stream> <consumer> [rate]
//
// prints one JSON line: {"seconds": s, "received": k}, {"lat": [seconds...]} or both
// (row s, whose last argument is the number of requesters, not a rate).
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

const idle = 5 * time.Second // no new delivery for this long: missing messages count as lost

var payload = []byte("xxxxxxxxxxxxxxxx")

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
	os.Exit(1)
}

func connect(url string) *nats.Conn {
	nc, err := nats.Connect(url)
	if err != nil {
		fail("connect: %v", err)
	}
	return nc
}

// waitCount waits for done while deliveries keep coming; false once they stall for idle.
func waitCount(done chan struct{}, count *int64) bool {
	last, since := atomic.LoadInt64(count), time.Now()
	for {
		select {
		case <-done:
			return true
		case <-time.After(50 * time.Millisecond):
			c := atomic.LoadInt64(count)
			if c != last {
				last, since = c, time.Now()
			} else if time.Since(since) > idle {
				return false
			}
		}
	}
}

func rowA(url string, n int) map[string]interface{} {
	nc := connect(url)
	defer nc.Close()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := nc.Publish("bench.a", payload); err != nil {
			fail("publish: %v", err)
		}
	}
	if err := nc.FlushTimeout(60 * time.Second); err != nil {
		fail("flush: %v", err)
	}
	return map[string]interface{}{"seconds": time.Since(t0).Seconds()}
}

func rowB(url string, n int) map[string]interface{} {
	subNc := connect(url)
	defer subNc.Close()
	pubNc := connect(url)
	defer pubNc.Close()
	var count int64
	done := make(chan struct{})
	sub, err := subNc.Subscribe("bench.b", func(m *nats.Msg) {
		if atomic.AddInt64(&count, 1) == int64(n) {
			close(done)
		}
	})
	if err != nil {
		fail("subscribe: %v", err)
	}
	sub.SetPendingLimits(n+1, -1)
	subNc.Flush()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := pubNc.Publish("bench.b", payload); err != nil {
			fail("publish: %v", err)
		}
	}
	if err := pubNc.FlushTimeout(60 * time.Second); err != nil {
		fail("flush: %v", err)
	}
	if !waitCount(done, &count) {
		fail("lost messages: %d of %d", atomic.LoadInt64(&count), n)
	}
	return map[string]interface{}{"seconds": time.Since(t0).Seconds()}
}

func rowC(url string, n int) map[string]interface{} {
	srv := connect(url)
	defer srv.Close()
	srv.Subscribe("bench.c", func(m *nats.Msg) { m.Respond(m.Data) })
	srv.Flush()
	nc := connect(url)
	defer nc.Close()
	lat := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := nc.Request("bench.c", payload, 5*time.Second); err != nil {
			fail("request: %v", err)
		}
		lat = append(lat, time.Since(t0).Seconds())
	}
	return map[string]interface{}{"lat": lat}
}

func rowD(url string, n int, subj string) map[string]interface{} {
	nc := connect(url)
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		fail("jetstream: %v", err)
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := js.Publish(subj, payload); err != nil {
			fail("js publish: %v", err)
		}
	}
	return map[string]interface{}{"seconds": time.Since(t0).Seconds()}
}

func rowE(url string, n int, subj string) map[string]interface{} {
	nc := connect(url)
	defer nc.Close()
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(1000))
	if err != nil {
		fail("jetstream: %v", err)
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(subj, payload); err != nil {
			fail("js publish async: %v", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		fail("%d async publishes still await their ack", js.PublishAsyncPending())
	}
	return map[string]interface{}{"seconds": time.Since(t0).Seconds()}
}

func rowF(url string, n int, stream, consumer string, ack bool) map[string]interface{} {
	nc := connect(url)
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		fail("jetstream: %v", err)
	}
	sub, err := js.PullSubscribe("", consumer, nats.Bind(stream, consumer))
	if err != nil {
		fail("pull subscribe: %v", err)
	}
	got := 0
	t0 := time.Now()
	for got < n {
		batch := n - got
		if batch > 1000 {
			batch = 1000
		}
		msgs, err := sub.Fetch(batch, nats.MaxWait(10*time.Second))
		if err != nil || len(msgs) == 0 {
			fail("lost messages: fetched %d of %d (%v)", got, n, err)
		}
		if ack {
			for _, m := range msgs {
				m.Ack()
			}
		}
		got += len(msgs)
	}
	if ack {
		if err := nc.FlushTimeout(60 * time.Second); err != nil {
			fail("flush: %v", err)
		}
	}
	return map[string]interface{}{"seconds": time.Since(t0).Seconds(), "received": got}
}

// rowH: one-way latency publish -> subscriber callback at a steady rate; the publish
// time (ns since base, this process's monotonic clock) is in the payload.
func rowH(url string, n int, rate float64) map[string]interface{} {
	subNc := connect(url)
	defer subNc.Close()
	pubNc := connect(url)
	defer pubNc.Close()
	base := time.Now()
	lat := make([]float64, n)
	var count int64
	done := make(chan struct{})
	sub, err := subNc.Subscribe("bench.h", func(m *nats.Msg) {
		sent := int64(binary.LittleEndian.Uint64(m.Data))
		k := atomic.AddInt64(&count, 1)
		lat[k-1] = float64(int64(time.Since(base))-sent) / 1e9
		if k == int64(n) {
			close(done)
		}
	})
	if err != nil {
		fail("subscribe: %v", err)
	}
	sub.SetPendingLimits(n+1, -1)
	subNc.Flush()
	buf := make([]byte, 16)
	copy(buf, payload)
	interval := time.Duration(float64(time.Second) / rate)
	t0 := time.Now()
	for i := 0; i < n; {
		due := int(time.Since(t0)/interval) + 1
		if due > n {
			due = n
		}
		for ; i < due; i++ {
			binary.LittleEndian.PutUint64(buf, uint64(time.Since(base)))
			if err := pubNc.Publish("bench.h", buf); err != nil {
				fail("publish: %v", err)
			}
		}
		if next := t0.Add(time.Duration(i) * interval); time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
	}
	if !waitCount(done, &count) {
		fail("lost messages: %d of %d", atomic.LoadInt64(&count), n)
	}
	return map[string]interface{}{"lat": lat}
}

// rowS: an echo service (nats.go's micro) on one connection, requesters goroutines on
// another, each sending its share of n requests one after the other.
func rowS(url string, n int, requesters int) map[string]interface{} {
	srv := connect(url)
	defer srv.Close()
	svc, err := micro.AddService(srv, micro.Config{
		Name:    fmt.Sprintf("bench_s_%d", os.Getpid()),
		Version: "1.0.0",
		Endpoint: micro.Endpoint{
			Subject: fmt.Sprintf("bench.s.%d", os.Getpid()),
			Handler: func(req *micro.Request) { req.Respond(req.Data()) },
		},
	})
	if err != nil {
		fail("add service: %v", err)
	}
	defer svc.Stop()
	srv.Flush()
	nc := connect(url)
	defer nc.Close()
	subject := fmt.Sprintf("bench.s.%d", os.Getpid())
	lats := make([][]float64, requesters)
	var wg sync.WaitGroup
	t0 := time.Now()
	for r := 0; r < requesters; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			lat := make([]float64, 0, n/requesters)
			for i := 0; i < n/requesters; i++ {
				t := time.Now()
				if _, err := nc.Request(subject, payload, 5*time.Second); err != nil {
					fail("request: %v", err)
				}
				lat = append(lat, time.Since(t).Seconds())
			}
			lats[r] = lat
		}(r)
	}
	wg.Wait()
	dt := time.Since(t0).Seconds()
	all := make([]float64, 0, n)
	for _, lat := range lats {
		all = append(all, lat...)
	}
	return map[string]interface{}{"seconds": dt, "lat": all}
}

func main() {
	if len(os.Args) < 7 {
		fmt.Fprintln(os.Stderr, "usage: natsgo <row> <url> <n> <subject> <stream> <consumer> [rate]")
		os.Exit(2)
	}
	row, url := os.Args[1], os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n < 1 {
		fail("bad count %q", os.Args[3])
	}
	subj, stream, consumer := os.Args[4], os.Args[5], os.Args[6]
	rate := 20000.0
	if len(os.Args) > 7 {
		if rate, err = strconv.ParseFloat(os.Args[7], 64); err != nil || rate <= 0 {
			fail("bad rate %q", os.Args[7])
		}
	}
	var res map[string]interface{}
	switch row {
	case "a":
		res = rowA(url, n)
	case "b":
		res = rowB(url, n)
	case "c":
		res = rowC(url, n)
	case "d":
		res = rowD(url, n, subj)
	case "e":
		res = rowE(url, n, subj)
	case "f":
		res = rowF(url, n, stream, consumer, false)
	case "f2":
		res = rowF(url, n, stream, consumer, true)
	case "h":
		res = rowH(url, n, rate)
	case "s":
		res = rowS(url, n, int(rate))
	default:
		fmt.Fprintf(os.Stderr, "row %s has no nats.go implementation\n", row)
		os.Exit(2)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}
