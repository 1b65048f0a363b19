package engine

import "github.com/dpsim/dpsim/pkg/sim"

// SetTap makes tap (nil: none) receive the transcript the player's eavesdropper takes in, episode
// by episode (sim.Tap): the auditor's precision scores read the published bits through it.
func (l *Player) SetTap(tap sim.Tap) { l.eve.SetTap(tap) }

// SetTap makes tap (nil: none) receive the transcript of slot j (episode ep+j of a Play from ep)
// that the batch's eavesdropper takes in.
func (l *BatchPlayer) SetTap(j int, tap sim.Tap) { l.batch.SetTap(j, tap) }
