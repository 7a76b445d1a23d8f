package render

import "time"

// A render runs on a goroutine of its own, so that one that overruns its
// budget can be abandoned (Set.runWith). text/template recurses deeply: a
// fresh goroutine grows its stack from 8 KiB several times in every
// render, which cost a tenth of a render's CPU. Renders therefore run on
// goroutines that are kept for the next render while they are busy often
// enough, and end when they have been idle for workerIdle: there are about
// as many as renders run at once, and none once rendering stops.
const workerIdle = 10 * time.Second

// idleWorkers is where idle workers wait for a render. It is unbuffered:
// a send succeeds only when a worker is waiting, so a render never queues
// behind another one.
var idleWorkers = make(chan func())

// goRender runs f on an idle worker, or on a new one.
func goRender(f func()) {
	select {
	case idleWorkers <- f:
	default:
		go renderWorker(f)
	}
}

func renderWorker(f func()) {
	f()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case f = <-idleWorkers:
			f()
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		}
	}
}
