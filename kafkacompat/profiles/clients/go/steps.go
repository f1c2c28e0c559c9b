// Shared by every Go client's program (copied next to its main.go when it is built): the
// steps and the JSON lines of kafkacompat.testing.client_traffic.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

const topic = "traffic"
const wait = 20 * time.Second

var payload = []byte("kafkacompat traffic kafkacompat traffic kafkacompat traffic kafkacompat traffic ")

type traffic struct {
	library, release string
	steps            []map[string]any
	ok               bool
}

type stop struct{}

func emit(event map[string]any) {
	line, _ := json.Marshal(event)
	fmt.Println(string(line))
}

func (t *traffic) end(step map[string]any) {
	t.steps = append(t.steps, step)
	emit(step)
}

func (t *traffic) step(name string, body func() error) {
	emit(map[string]any{"started": name})
	if err := body(); err != nil {
		t.ok = false
		text := fmt.Sprintf("%T: %v", err, err)
		if len(text) > 500 {
			text = text[:500]
		}
		t.end(map[string]any{"step": name, "ok": false, "error": text})
		panic(stop{})
	}
	t.end(map[string]any{"step": name, "ok": true})
}

func (t *traffic) skip(name, why string) {
	t.end(map[string]any{"step": name, "ok": true, "skipped": why})
}

// run calls scenario and prints the report, whatever step it stopped in.
func run(scenario func(t *traffic, bootstrap, group string)) {
	t := &traffic{library: os.Args[1], release: os.Args[2], ok: true}
	group := fmt.Sprintf("kafkacompat-traffic-%08x", time.Now().UnixNano()&0xffffffff)
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, stopped := r.(stop); !stopped {
					t.ok = false
					t.end(map[string]any{"step": "setup", "ok": false, "error": fmt.Sprint(r)})
				}
			}
		}()
		scenario(t, os.Args[3], group)
	}()
	emit(map[string]any{"report": map[string]any{"library": t.library, "version": t.release, "ok": t.ok, "steps": t.steps}})
	if !t.ok {
		os.Exit(1)
	}
}
