/** The scheduler's status: the state as steering shows it, at the current instant. */
import type { Rejected } from "@flotta/core/Spec"
import { Clock, Effect, Ref } from "effect"
import * as Calendar from "../Calendar.js"
import { overrideView } from "../Overrides.js"
import type { RoutineStatus, RunningFire, SchedulerStatus } from "../Steering.js"
import { DAY, describeZone, formatDate, formatLocal, iso, localDay, weekdayOf } from "../WorkingHours.js"
import type { Running, Shared } from "./state.js"

const runningView = (r: Running): RunningFire => ({
  fireId: r.fireId,
  routine: r.routine,
  action: r.action,
  trigger: r.trigger,
  since: iso(r.since)
})

export const status = Effect.fn("status.status")(function*(shared: Shared, rejected: ReadonlyArray<Rejected>) {
  const { state, zone } = shared
  const now = yield* Clock.currentTimeMillis
  const s = yield* Ref.get(state)
  const day = localDay(zone, now)
  // Overrides that expired since the heartbeat last looked are already gone from the view.
  const live = { ...s, overrides: s.overrides.filter((o) => o.until > now) }
  const edge = Calendar.nextEdge(Calendar.calendarOf(shared, live), now, 7 * DAY)
  const pending = s.mode === "working"
    ? Calendar.workingMs(Calendar.calendarOf(shared, s), Math.min(s.lastEval, now), now)
    : 0
  return {
    mode: s.mode,
    working: Calendar.workingNow(shared, live, now),
    reason: Calendar.reasonAt(shared, live, now),
    timezone: describeZone(zone),
    now: iso(now),
    localTime: formatLocal(zone, now),
    today: { date: formatDate(day), weekday: weekdayOf(day), windows: Calendar.windowViews(shared, live, day) },
    overrides: live.overrides.map(overrideView),
    running: [
      ...[...s.routines.values()].flatMap((r) => (r.running === null ? [] : [runningView(r.running)])),
      ...[...s.adhoc.values()].map(runningView)
    ],
    routines: [...s.routines.values()].map((r0): RoutineStatus => {
      // Working time since the heartbeat last counted it.
      const r = { ...r0, workedMs: r0.workedMs + pending }
      const railed = r.railed && r.spentDay === day
      const next = Calendar.nextFire(shared, live, { ...r, railed }, now)
      return {
        name: r.routine.name,
        action: r.routine.action,
        every: r.routine.every,
        state: r.running !== null ? "running" : railed ? "railed" : "idle",
        nextFireAt: next === undefined ? null : iso(next),
        ...("intervalMs" in r.routine.every ? { workedMs: r.workedMs } : {}),
        spentTodayUsd: r.spentDay === day ? r.spentUsd : 0,
        maxBudgetUsd: r.routine.maxBudgetUsd ?? null,
        dailyBudgetUsd: r.routine.dailyBudgetUsd ?? null,
        railedUntil: railed ? iso(Calendar.nextMidnight(zone, now)) : null,
        lastFire: r.lastFire
      }
    }),
    rejected: rejected.map(({ message, path }) => ({ path, message })),
    nextChange: edge === undefined || s.mode === "paused" ? null : iso(edge)
  } satisfies SchedulerStatus
})
