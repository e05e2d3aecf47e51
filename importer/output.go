package importer

import "path/filepath"

// output is what a converter builds, whatever it reads: the listeners
// in the order first met, the routes, the notes, and the blocks that
// answer any host (for portNotes).
type output struct {
	notes       []Note
	listeners   map[string]*obj
	listenOrder []string
	routes      []*obj
	served      []served
}

func newOutput() output {
	return output{listeners: map[string]*obj{}}
}

// addNote records n once.
func (o *output) addNote(n Note) {
	for _, x := range o.notes {
		if x == n {
			return
		}
	}
	o.notes = append(o.notes, n)
}

// listener returns the listener at addr, adding it the first time.
func (o *output) listener(addr string) *obj {
	if l, ok := o.listeners[addr]; ok {
		return l
	}
	l := newObj().set("address", addr)
	o.listeners[addr] = l
	o.listenOrder = append(o.listenOrder, addr)
	return l
}

// settle notes the blocks that listen on some ports only, leaves out the
// routes gale could not order, and answers 404 where no route is left;
// it says whether it had to.
func (o *output) settle() (empty bool) {
	o.notes = append(o.notes, portNotes(o.served, o.listenOrder, o.listeners)...)
	var dropped []Note
	o.routes, dropped = dropConflicts(o.routes)
	o.notes = append(o.notes, dropped...)
	if len(o.routes) > 0 {
		return false
	}
	o.routes = append(o.routes, newObj().set("path", "/").set("respond", newObj().set("status", 404)))
	return true
}

// result renders the config converted from the file at path.
func (o *output) result(path string, f Format) (*Result, error) {
	var ls []*obj
	for _, a := range o.listenOrder {
		ls = append(ls, o.listeners[a])
	}
	if len(ls) == 0 {
		ls = append(ls, newObj().set("address", ":80"))
	}
	out := newObj()
	out.set("listen", simpleListen(ls))
	out.set("routes", o.routes)
	y, err := render(out, header(filepath.Base(path), f, len(o.notes)))
	if err != nil {
		return nil, err
	}
	return &Result{YAML: y, Notes: o.notes}, nil
}

// simpleListen writes a listener without options as its address alone.
func simpleListen(ls []*obj) []any {
	var out []any
	for _, l := range ls {
		if len(l.keys) == 1 {
			out = append(out, l.get("address"))
		} else {
			out = append(out, l)
		}
	}
	return out
}
