// The stand-in's watch (GET /api/v1/nodes?watch=1&resourceVersion=RV...), the protocol of
// kube-apiserver as noderecover follows it: 200, Content-Type application/json, a chunked
// stream of one event per line, {"type":"MODIFIED","object":{"kind":"Node",...}}, and a
// BOOKMARK every 30 s; the stream ends at timeoutSeconds. What a watch sends is armed from the
// control port, for the benchmark:
//
//	GET /watch?n=N&events=E&hold=1   the next watch of cluster N streams E MODIFIED events
//	                                 (nodes in turn, each with a new resourceVersion) as fast as
//	                                 the client reads them; hold=1: only after GET /go?n=N
//	GET /watch?n=N&unknown=I,J,..    the next watch turns node I Ready=Unknown (an event whose
//	                                 lastTransitionTime is a whole second, sent on that second),
//	                                 then J 3 s later, ...; /stats gives when each was patched
//	                                 (a stream the client drops hands the rest to its next watch)
//
// Later watches, and an unarmed one, send bookmarks only. It never changes the nodes a list
// serves (the pages are serialized once); an event changes only the resourceVersion a PATCH
// must test for that node (and a list selecting it by name serves), as on a real server, until
// the next /watch puts them back as listed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type watchPlan struct {
	events  int
	hold    bool
	unknown []int
}

// watchState is a cluster's watch side: the plan for the next watch, counters, the patch
// times of nodes turned Unknown.
type watchState struct {
	mu        sync.Mutex
	plan      *watchPlan
	rv        int // last resourceVersion given out
	goCh      chan struct{}
	open      int   // watches being served
	watches   int64 // watch requests
	events    int64 // events written
	bookmarks int64
	streamed  int64 // armed streams written to the end
	streamNs  int64 // time the last armed stream took to write, ns
	unknownAt map[int]time.Time
	patchedAt map[int]time.Time
}

const bookmarkEvery = 30 * time.Second

func (c *cluster) arm(p *watchPlan) {
	// The lists serve the nodes as made: a PATCH tests those resourceVersions again.
	c.mu.Lock()
	for i := range c.nodes {
		a, b := rvSpan(c.nodes[i])
		c.rvs[i] = string(c.nodes[i][a:b])
	}
	c.mu.Unlock()
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	c.ws.plan = p
	c.ws.goCh = make(chan struct{})
	if c.ws.unknownAt == nil {
		c.ws.unknownAt, c.ws.patchedAt = map[int]time.Time{}, map[int]time.Time{}
	}
}

func (c *cluster) release() {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	if c.ws.goCh != nil {
		select {
		case <-c.ws.goCh:
		default:
			close(c.ws.goCh)
		}
	}
}

func (c *cluster) nextRV() int {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	if c.ws.rv < c.rv {
		c.ws.rv = c.rv
	}
	c.ws.rv++
	return c.ws.rv
}

// notePatched records the first accepted PATCH of a node turned Unknown.
func (c *cluster) notePatched(i int) {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	if _, ok := c.ws.unknownAt[i]; ok {
		if _, done := c.ws.patchedAt[i]; !done {
			c.ws.patchedAt[i] = time.Now()
		}
	}
}

// listOne answers a list that selects one node by name (metadata.name=NAME, how noderecover
// reads a node again after a refused PATCH) with that node at its current resourceVersion.
func (c *cluster) listOne(w http.ResponseWriter, fs string) {
	name := strings.TrimPrefix(fs, "metadata.name=")
	i, ok := c.index[name]
	if name == fs || !ok {
		c.st.other.Add(1)
		status(w, 400, "BadRequest", "only metadata.name=NAME of a node is served here")
		return
	}
	c.mu.Lock()
	rv := c.rvs[i]
	c.mu.Unlock()
	bw := bufio.NewWriter(w)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(bw, `{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[`, c.nextRV())
	a, b := rvSpan(c.nodes[i])
	bw.Write(c.nodes[i][:a])
	bw.WriteString(rv)
	bw.Write(c.nodes[i][b:])
	bw.WriteString("]}\n")
	bw.Flush()
	c.st.lists.Add(1)
}

// rvSpan is where the value of metadata.resourceVersion lies in a node's JSON.
func rvSpan(node []byte) (int, int) {
	const key = `"resourceVersion":"`
	a := strings.Index(string(node[:512]), key) + len(key)
	return a, a + strings.IndexByte(string(node[a:a+32]), '"')
}

// writeEvent writes a MODIFIED event of node i (its JSON, kind and apiVersion added, with
// resourceVersion rv) into bw.
func (c *cluster) writeEvent(bw *bufio.Writer, node []byte, rv string) {
	a, b := rvSpan(node)
	bw.WriteString(`{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1",`)
	bw.Write(node[1:a])
	bw.WriteString(rv)
	bw.Write(node[b:])
	bw.WriteString("}\n")
}

func (c *cluster) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if _, err := strconv.Atoi(q.Get("resourceVersion")); err != nil {
		c.st.other.Add(1)
		status(w, 400, "BadRequest", "a watch here needs the resourceVersion of a list")
		return
	}
	timeout := 1800
	if s := q.Get("timeoutSeconds"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			timeout = v
		}
	}
	c.ws.mu.Lock()
	plan, goCh := c.ws.plan, c.ws.goCh
	c.ws.plan = nil
	c.ws.watches++
	c.ws.open++
	c.ws.mu.Unlock()
	defer func() {
		c.ws.mu.Lock()
		c.ws.open--
		c.ws.mu.Unlock()
	}()
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	bw := bufio.NewWriterSize(w, writePiece)
	flush := func() bool {
		if bw.Flush() != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	flush()
	end := time.After(time.Duration(timeout) * time.Second)
	if plan != nil && plan.hold {
		select {
		case <-goCh:
		case <-r.Context().Done():
			return
		case <-end:
			return
		}
	}
	if plan != nil && plan.events > 0 {
		t0 := time.Now()
		for k := 0; k < plan.events; k++ {
			i := k % c.n
			rv := strconv.Itoa(c.nextRV())
			c.mu.Lock()
			c.rvs[i] = rv
			c.mu.Unlock()
			c.writeEvent(bw, c.nodes[i], rv)
			if bw.Buffered() >= writePiece-16*1024 && !flush() {
				return
			}
		}
		if !flush() {
			return
		}
		c.ws.mu.Lock()
		c.ws.events += int64(plan.events)
		c.ws.streamed++
		c.ws.streamNs = int64(time.Since(t0))
		c.ws.mu.Unlock()
	}
	if plan != nil {
		for k, i := range plan.unknown {
			// on a whole second, 1 s (the first) or 3 s (the others) from now
			wait := time.Second
			if k > 0 {
				wait = 3 * time.Second
			}
			at := time.Now().Add(wait).Truncate(time.Second)
			time.Sleep(time.Until(at))
			if r.Context().Err() != nil { // gone while we waited
				c.ws.mu.Lock()
				if c.ws.plan == nil {
					c.ws.plan = &watchPlan{unknown: plan.unknown[k:]}
				}
				c.ws.mu.Unlock()
				return
			}
			rv := strconv.Itoa(c.nextRV())
			b, _ := json.Marshal(unknownSince(makeNode(i, c.made, 0), at))
			c.mu.Lock()
			c.rvs[i] = rv
			c.mu.Unlock()
			c.writeEvent(bw, b, rv)
			ok := flush()
			c.ws.mu.Lock()
			if ok {
				c.ws.unknownAt[i] = at
				c.ws.events++
			} else if c.ws.plan == nil {
				// the client dropped the stream: the next watch carries on from this node
				c.ws.plan = &watchPlan{unknown: plan.unknown[k:]}
			}
			c.ws.mu.Unlock()
			if !ok {
				return
			}
		}
	}
	tick := time.NewTicker(bookmarkEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-end:
			return
		case <-tick.C:
			c.ws.mu.Lock()
			rv := c.ws.rv
			if rv < c.rv {
				rv = c.rv
			}
			c.ws.bookmarks++
			c.ws.mu.Unlock()
			fmt.Fprintf(bw, `{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"%d"}}}`+"\n", rv)
			if !flush() {
				return
			}
		}
	}
}

// watchStats is the watch side of a /stats line.
func (c *cluster) watchStats() string {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	var lat []string
	for i, at := range c.ws.unknownAt {
		if p, ok := c.ws.patchedAt[i]; ok {
			lat = append(lat, fmt.Sprintf("%d:%d", i, p.Sub(at).Microseconds()))
		} else {
			lat = append(lat, fmt.Sprintf("%d:-1", i))
		}
	}
	return fmt.Sprintf("watches=%d watching=%d events=%d bookmarks=%d streamed=%d stream_us=%d unknown_patched_us=%q",
		c.ws.watches, c.ws.open, c.ws.events, c.ws.bookmarks, c.ws.streamed, c.ws.streamNs/1000, strings.Join(lat, ","))
}

// controlWatch handles /watch and /go of the control port.
func controlWatch(clusters []*cluster, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("n"))
	for _, c := range clusters {
		if c.n != n {
			continue
		}
		if r.URL.Path == "/go" {
			c.release()
			fmt.Fprintln(w, "go")
			return
		}
		p := &watchPlan{hold: q.Get("hold") == "1"}
		p.events, _ = strconv.Atoi(q.Get("events"))
		if s := q.Get("unknown"); s != "" {
			for _, f := range strings.Split(s, ",") {
				i, err := strconv.Atoi(f)
				if err != nil || i < 0 || i >= c.n {
					http.Error(w, "bad node index "+f, 400)
					return
				}
				p.unknown = append(p.unknown, i)
			}
		}
		c.arm(p)
		fmt.Fprintln(w, "armed")
		return
	}
	http.NotFound(w, r)
}
