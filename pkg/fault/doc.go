// Package fault injects per-link network faults - delay, jitter, loss, duplication and
// reordering - into the messages of a dpsim run, deterministically from the run seed.
//
// A link is one publisher endpoint to one subscriber endpoint ("cloud.0" -> "plant.0";
// endpoints are named "<role>.<id>", as pkg/endpoint writes them). The scenario's faults.links
// rules (scenario.LinkFault) say which links they match (by endpoint pattern or by data subject)
// and what they do. The fate of the message a publisher releases at step t of episode e on a
// link is a pure function of (run seed, rule, link, e, t) (Link.Decide, counter-based draws
// rng.At): the in-memory network of the fast engine and the publish side of every NATS
// process compute the same fates without coordinating, which is what makes a faulty run
// reproducible and the two engines bit-identical in lockstep mode. A rule's draws are labelled
// by its name and the link only: adding a rule (a live intervention, recorded with a
// lifetime, scenario.Lifetime) leaves every other rule's fates as they were.
//
// # Logical time (lockstep)
//
// Every publisher releases exactly one message per step t = 0..T-1. An Outbox turns the
// releases into deliveries, per subscriber: a delivery has the message's own step (Step) and
// the logical step at which it is delivered (At >= Step). For each subscriber and each step
// t, the deliveries with At = t are emitted together at the publisher's release of step t,
// in this order: late copies due at t (delayed by At - Step steps), the step-t message itself
// (and its duplicate), then copies reordered behind it. The last one has More = false; when
// there is none (the message was dropped or delayed), a Gap delivery stands in for it. A
// receiver in lockstep therefore knows that a publisher is finished with step t when it has
// that publisher's delivery with At = t and More = false: a lost message is detected at the
// step's logical deadline, never by a wall-clock timeout, and never hangs the run. The
// subscribers whose link delivers just the step's message, on time and once, share one
// Broadcast delivery (Except naming the others), so a faulty release costs little more than a
// clean one. When every link only drops (or is clear), nothing is ever held: a release is
// one draw per dropping link, and a caller that delivers the message itself (the in-memory
// network) may ask Outbox.Drops for the links that lose it instead of taking the deliveries.
//
// In realtime mode the same deliveries are sent, gaps excepted (a real network gives no
// notice of a loss): the receiver's step deadline is the wall clock's. Millisecond delays
// (unit ms) hold a delivery for that long on the NATS path; they have no effect on logical
// time (the fast engine ignores them, and a lockstep run waits for the message).
package fault
