/**
 * Processes by pid, told apart from a later process that reuses the pid by the kernel's start time: how a
 * store's lock names a live holder, and how a restarted host finds the children its predecessor left behind.
 */
import { Effect, Predicate, Schedule } from "effect"
import * as fs from "node:fs"

/** The start time of a pid (clock ticks since boot, from /proc), or null where there is no /proc. */
export const startTicks = (pid: number): string | null => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name is in parentheses and may hold spaces: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[19] ?? null
  } catch {
    return null
  }
}

const sleep50 = Schedule.spaced("50 millis")

/** Whether the process that was `pid` (started at `ticks`, when known) is still running. */
export const isAlive = (pid: number, ticks: string | null): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: it runs, as another user's process.
    if (!Predicate.hasProperty(error, "code") || error.code !== "EPERM") return false
  }
  if (ticks === null) return true
  const now = startTicks(pid)
  return now === null || now === ticks
}

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name)
  } catch {
    // gone already
  }
}

/**
 * Ends a process left behind (SIGTERM, then SIGKILL after `graceMs`) and returns once it is gone. False when
 * it was not running.
 */
export const end = Effect.fnUntraced(function*(pid: number, ticks: string | null, graceMs = 5_000) {
  if (!isAlive(pid, ticks)) return false
  signal(pid, "SIGTERM")
  const gone = Effect.suspend(() => (isAlive(pid, ticks) ? Effect.fail("alive" as const) : Effect.void))
  const waited = yield* gone.pipe(
    Effect.retry({ times: Math.ceil(graceMs / 50), schedule: sleep50 }),
    Effect.either
  )
  if (waited._tag === "Left") {
    signal(pid, "SIGKILL")
    yield* gone.pipe(Effect.retry({ times: 200, schedule: sleep50 }), Effect.ignore)
  }
  return true
})
