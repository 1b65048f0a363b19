package plan

import "reflect"

// FileType is the Go type of a plan file's JSON document (WriteFile, ParseFile): pkg/schema
// reflects it into the plan file's JSON Schema, docs/schema/plan.json.
func FileType() reflect.Type { return reflect.TypeOf(planFile{}) }
