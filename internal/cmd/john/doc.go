// Package johncmd implements `dpsim john`: the John ellipsoid of the symmetric polytope
// {x : |a_i^T x| <= 1} whose rows a_i are read from a CSV file, by the exact fixed-point
// iteration, the fast sketched Algorithm 1 of Gu et al. or its noisy (dp) version, with
// the verification a user needs and optional accuracy plots.
package johncmd
