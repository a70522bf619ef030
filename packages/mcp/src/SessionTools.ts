/**
 * A session's own life over MCP, beyond its turns: `flotta_fork` starts a new agent with a session's conversation
 * (up to one of its turns), leaving the source as it is.
 */
import { Flotta } from "@flotta/core/Flotta"
import { Effect } from "effect"
import { seconds } from "./internal/wait.js"
import * as S from "./Schemas.js"
import * as Tool from "./Tool.js"

// Hints (see Tools.ts): a fork starts a process that the model drives.
const STARTS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const

export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: "flotta_fork",
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
  })
]
