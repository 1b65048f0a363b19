package sim

import "time"

// The step-wise Driver: the same loop as Episode, taken apart so that a caller can run
// several drivers (one per episode in flight) from one receive loop of its own - the loop
// receives, hands each delivery to the driver of its episode (Deliver), ticks the drivers
// whose deadline passed (TickDue) and stops when every driver is Done. Driving one driver
// this way - Begin, then until Done: Release, Recv(Deadline), Deliver or TickDue - is
// Episode step for step, so the cores see the same deliveries and ticks.

// Begin starts episode ep on every hosted core from the explicit initial state x0 (nil: the
// scenario's), as Episode does before its loop: the cores' first outputs go to the
// transport and their first records to the sink.
func (d *Driver) Begin(ep int, x0 []float64) error {
	d.reset()
	for k, c := range d.cores {
		if err := c.Begin(ep, x0); err != nil {
			return err
		}
		if d.pace != nil {
			d.since[k] = d.now
		}
		if err := d.flush(k); err != nil {
			return err
		}
	}
	return nil
}

// Deliver steps every hosted core the delivery m is for (m is the driver's caller's: it
// need not be valid after the call), reading the clock first as the loop does after a
// receive.
func (d *Driver) Deliver(m *Msg) error {
	d.readClock()
	return d.deliver(m)
}

// TickDue ticks the cores whose step deadline passed (logical time: the waiting cores of the
// earliest step), reading the clock first: call it when a receive waited until Deadline in
// vain.
func (d *Driver) TickDue() error {
	d.readClock()
	return d.tickDue()
}

// Release sends the held outputs whose release time came (a Pacer's; nothing without one).
// Call it before each receive, as the loop does.
func (d *Driver) Release() error {
	if d.pace == nil {
		return nil
	}
	return d.releaseDue()
}

// Deadline returns until when a receive for this driver may wait: the earliest of its held
// releases and its waiting cores' step deadlines (zero with logical time: do not wait).
func (d *Driver) Deadline() time.Time { return d.deadline() }

// Done reports whether every hosted core finished the episode and nothing is held.
func (d *Driver) Done() bool { return d.ndone == len(d.cores) && len(d.held) == 0 }

func (d *Driver) readClock() {
	if d.pace != nil {
		d.now = d.pace.Now()
	}
}
