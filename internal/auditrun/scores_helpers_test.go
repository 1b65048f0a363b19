package auditrun

import (
	"math/rand/v2"
	"strconv"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
func itoa(i int) string              { return strconv.Itoa(i) }
func ftoa(v float64) string          { return strconv.FormatFloat(v, 'g', -1, 64) }
