/**
 * A session's own life over MCP, beyond its turns: `flotta_fork` starts a new agent with a session's conversation
 * (up to one of its turns), leaving the source as it is; `flotta_hibernate` ends a session's process and keeps the
 * rest, `flotta_wake` starts it again (a prompt does too); `flotta_compact` and `flotta_clear` queue a compaction or a
 * fresh conversation as its next turn, and wait for it within a bound.
 */
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import { Effect, Schema } from "effect"
import * as ToolWait from "./internal/toolWait.js"
import { seconds } from "./internal/wait.js"
import * as S from "./Schemas.js"
import * as Tool from "./Tool.js"

// Hints (see Tools.ts): a fork starts a process that the model drives; hibernating and waking lose nothing and
// may be repeated.
const STARTS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const
const SLEEPS = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const

export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: Operations.toolName("fork"),
    title: "Fork a session",
    description: "Start a new session agent whose conversation is the source's up to and including turn `at` " +
      "(default: its last turn that succeeded), under a session id of its own, and return its info. It takes the " +
      "source's options unless given others. The source is left as it is (its queue and its turn in flight go " +
      "on). An unknown source is AgentNotFound, an unknown turn NoResult, one still going TurnPending, a failed " +
      "one CannotFork, a taken name AgentAlreadyExists.",
    annotations: STARTS,
    input: S.ForkArgs,
    output: S.AgentInfo,
    run: ({ name, source, turnTimeoutSeconds, ...options }) =>
      Effect.flatMap(Flotta, (fleet) =>
        fleet.fork(source, name, {
          ...options,
          ...(turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) })
        }))
  }),
  Tool.make({
    name: Operations.toolName("compact"),
    title: "Compact a session",
    description: "Queue a compaction of a session's conversation as its next turn (/compact, keeping what " +
      "`instructions` says), and wait for it, at most timeoutSeconds: the result's `compaction` has its trigger " +
      "and the tokens before and after, and `context` how full the context is now. The report log says compacted. " +
      "The fleet queues one by itself once a turn leaves the context past autoCompactAt.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: S.CompactArgs,
    output: S.WaitResult,
    run: ({ instructions, name, timeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* fleet.compact(name, instructions)
        return yield* ToolWait.waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
      })
  }),
  Tool.make({
    name: Operations.toolName("clear"),
    title: "Clear a session's conversation",
    description: "Queue a fresh conversation as a session's next turn (/clear): the same name, a new session id, " +
      "no memory of what was said. The transcript goes on, its clear turn marked Cleared; a fork at an earlier turn " +
      "still has the conversation from before.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    input: S.ClearArgs,
    output: S.WaitResult,
    run: ({ name, timeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* fleet.clear(name)
        return yield* ToolWait.waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
      })
  }),
  Tool.make({
    name: Operations.toolName("hibernate"),
    title: "Hibernate a session",
    description: "End an idle session's claude process cleanly and keep everything else (its session, its turns, " +
      "its name): its status is hibernated, and a prompt, a broadcast or flotta_wake starts it again with its " +
      "memory. The fleet does this by itself past maxLive (the session idle the longest first) and after " +
      "hibernateAfter. hibernated is false when it was asleep already; a session that is working, waiting on " +
      "someone or starting (or a run) is CannotHibernate.",
    annotations: SLEEPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, hibernated: Schema.Boolean, status: S.StatusView }),
    run: ({ name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const hibernated = yield* fleet.hibernate(name)
        return { name, hibernated, status: yield* fleet.status(name) }
      })
  }),
  Tool.make({
    name: Operations.toolName("wake"),
    title: "Wake a session",
    description: "Start a hibernated session's process again (--resume: its memory is intact), through the same " +
      "admission as any start, and return once it is up. woken is false when it was not asleep.",
    annotations: SLEEPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, woken: Schema.Boolean, info: S.AgentInfo }),
    run: ({ name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const woken = yield* fleet.wake(name)
        return { name, woken, info: yield* fleet.info(name) }
      })
  })
]
