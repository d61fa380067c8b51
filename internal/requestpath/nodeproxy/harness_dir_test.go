package nodeproxy

import (
	"sync"

	"github.com/sandgate/sandgate/internal/informer"
)

// fakeDir is a Directory the test edits.
type fakeDir struct {
	mu      sync.Mutex
	entries map[string]informer.Entry
	nodeIPs map[string]bool
	changed chan struct{} // closed and replaced at every edit
	// watches are WatchAccount's subscribers by user, called after
	// every set, edit or remove of the user.
	watches map[string]map[*func()]bool
	// missing is Lookup's error for a user it does not hold:
	// informer.ErrNoAccount unless set.
	missing error
	// pins are nodes' stale views of a user (by node, then user), which
	// their Lookup returns until the user's next set or edit.
	pins map[string]map[string]informer.Entry
}

// pin holds node's view of user at e, a cache lagging behind, until the
// user's next set or edit.
func (d *fakeDir) pin(node, user string, e informer.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pins == nil {
		d.pins = map[string]map[string]informer.Entry{}
	}
	if d.pins[node] == nil {
		d.pins[node] = map[string]informer.Entry{}
	}
	d.pins[node][user] = e
}

// lookupOn is Lookup as node sees it.
func (d *fakeDir) lookupOn(node, user string) (informer.Entry, error) {
	d.mu.Lock()
	e, pinned := d.pins[node][user]
	d.mu.Unlock()
	if pinned {
		return e, nil
	}
	return d.Lookup(user)
}

// WatchAccount makes the directory an AccountWatcher, as the informer is.
func (d *fakeDir) WatchAccount(user string, changed func()) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watches == nil {
		d.watches = map[string]map[*func()]bool{}
	}
	if d.watches[user] == nil {
		d.watches[user] = map[*func()]bool{}
	}
	d.watches[user][&changed] = true
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.watches[user], &changed)
	}
}

// notify calls user's watchers, outside the lock as the informer does.
func (d *fakeDir) notify(user string) {
	d.mu.Lock()
	var fns []func()
	for f := range d.watches[user] {
		fns = append(fns, *f)
	}
	d.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// remove deletes user's account.
func (d *fakeDir) remove(user string) {
	d.mu.Lock()
	delete(d.entries, user)
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}

// unpinLocked ends every node's stale view of user.
func (d *fakeDir) unpinLocked(user string) {
	for _, users := range d.pins {
		delete(users, user)
	}
}

// watch returns a channel closed at the next edit.
func (d *fakeDir) watch() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.changed
}

// editedLocked wakes the watchers of the last edit.
func (d *fakeDir) editedLocked() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

func (d *fakeDir) Lookup(user string) (informer.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[user]
	switch {
	case !ok && d.missing != nil:
		return informer.Entry{}, d.missing
	case !ok:
		return informer.Entry{}, informer.ErrNoAccount
	}
	return e, nil
}

func (d *fakeDir) IsNodeIP(ip string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nodeIPs[ip]
}

func (d *fakeDir) set(user string, e informer.Entry) {
	d.mu.Lock()
	d.entries[user] = e
	d.unpinLocked(user)
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}

func (d *fakeDir) edit(user string, f func(*informer.Entry)) {
	d.mu.Lock()
	e := d.entries[user]
	f(&e)
	d.entries[user] = e
	d.unpinLocked(user)
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}
