// Package budget is the accounting of one render: the seam between the
// template functions of engine/render and the limits a render is held to.
//
//	render: Set.Children / Set.Status start a render
//	  -> budget (this package): a Meter per render, stopped by the deadline
//	     or the caller's context
//	  -> every template function, range iteration, include and tpl call
//	     checks the Meter, and is charged what it allocates
//
// # Responsibilities
//
//   - Count what a render produces against its output limit, the template
//     calls against the calls limit and their nesting against MaxDepth;
//     answer the stop flag set by a timer or a context callback.
//   - Bound one call that allocates (Bounded): estimate what it will
//     allocate, refuse before calling when that does not fit, call, charge
//     what it returned. Every function of render that can build more than
//     its input goes through it, so that a refusal always comes before the
//     allocation it refuses.
//   - Measure values (Shape, Size): how large a value prints, walked with a
//     limit so that a value holding itself costs no more than the limit.
//   - Build every budget error (*Error, which render exports as
//     BudgetError), so that its names and messages are written once.
//
// It knows nothing of templates, files or objects: render decides what is
// charged where, this package how much fits.
package budget
