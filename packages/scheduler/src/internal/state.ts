/**
 * The running scheduler's state, and the handles its parts share. One `Ref` holds the whole state and every
 * change to it happens under one lock (the heartbeat's evaluation, a steering call, a fire's end), so each
 * change sees and leaves a consistent picture.
 */
import type { Effect, Queue, Ref } from "effect"
import type { Routine } from "../Routine.js"
import type { FireTrigger, Mode, Override, RoutineAction, RoutineStatus, ScanOptions } from "../Steering.js"
import type { Hours, TimeZone, Window } from "../WorkingHours.js"
import type { Recorder } from "./record.js"

/** What the fleet's typed failures have in common; the scheduler only shows them. */
export type Failure = { readonly _tag: string; readonly message: string }

export interface Running {
  readonly fireId: string
  readonly routine: string | null
  readonly action: RoutineAction
  readonly trigger: FireTrigger
  readonly since: number
}

export interface RoutineState {
  readonly routine: Routine
  /** `intervalMs`: working time since the last fire (the boot cursor starts it at zero). */
  readonly workedMs: number
  readonly running: Running | null
  /** The local day `spentUsd` belongs to. */
  readonly spentDay: number
  readonly spentUsd: number
  readonly railed: boolean
  readonly lastFire: RoutineStatus["lastFire"]
  /**
   * `dailyAt`: the instant of the newest slot taken (fired, or skipped with a reason). A slot at or before it is
   * never taken again: not after a restart of the host, nor when the clock steps back.
   */
  readonly lastSlot: number | null
}

export interface OverrideState {
  readonly id: string
  readonly kind: Override["kind"]
  readonly from: number
  readonly until: number
  readonly date?: number
  readonly window?: Window
  readonly minutes?: number
}

export interface State {
  readonly mode: Mode
  readonly overrides: ReadonlyArray<OverrideState>
  /** Local days made working days by `workOn` (for `dailyAt`). */
  readonly workDays: ReadonlySet<number>
  /** Whether the last evaluation found working time (wake and stop are its changes). */
  readonly working: boolean
  /** The instant of the last evaluation: cadences count from here. */
  readonly lastEval: number
  readonly routines: ReadonlyMap<string, RoutineState>
  /** Ad-hoc scans in flight. */
  readonly adhoc: ReadonlyMap<string, Running>
}

/**
 * What a fire is for: a configured routine, or an ad-hoc scan. `text` (a trigger's only) is what the event
 * says, already cut to size: it goes into the prompt (see `Actions.withEvent`).
 */
export type Target =
  | { readonly _tag: "Routine"; readonly routine: Routine; readonly text?: string }
  | { readonly _tag: "Scan"; readonly options: ScanOptions }

/** The state with one routine's entry replaced. */
export const withRoutine = (s: State, r: RoutineState): State => {
  const routines = new Map(s.routines)
  routines.set(r.routine.name, r)
  return { ...s, routines }
}

/**
 * Runs a steering change at the current instant, between two evaluations (so cadences count up to it and
 * its effect is seen at once), then wakes the heartbeat.
 */
export type Steer = <A, E>(change: (now: number) => Effect.Effect<A, E>) => Effect.Effect<A, E>

/** The handles every part of a running scheduler shares. */
export interface Shared {
  readonly zone: TimeZone
  readonly hours: Hours
  /** The heartbeat's longest sleep. */
  readonly tickMs: number
  readonly state: Ref.Ref<State>
  /** One change at a time. */
  readonly locked: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly record: Recorder
  /** Wakes the heartbeat early. Sliding, size one: pokes before it looks again count as one. */
  readonly poke: Queue.Queue<void>
}
