// Package numcsv reads the numeric CSV files of the offline commands (dpsim vecsum run, dpsim john):
// one row per record, the same number of finite numbers in every row, '#' starting a comment line.
//
// A first record is a header (column names) only when the caller says so (the commands' --header
// flag) or when every one of its cells is non-numeric. A first record that mixes numbers and words is
// an error, never a silently dropped data row: guessing "header" there would lose a row and change n
// and every sum computed from the file. Errors name the line, the data row and the column (all
// 1-based).
package numcsv
