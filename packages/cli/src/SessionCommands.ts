/**
 * Commands for a session's own life in a running `flotta serve`, over its MCP endpoint (see Connection): `fork`
 * starts a new agent with a session's conversation up to one of its turns; `compact` and `clear` queue a compaction
 * or a fresh conversation as its next turn, and wait for it; `hibernate` ends a session's process and keeps the rest,
 * `wake` starts it again. Each prints a compact view for a person, or with `--json` the server's
 * structured answer.
 */
import { Args, Command } from "@effect/cli"
import type { AgentInfo } from "@flotta/core/AgentView"
import * as Operations from "@flotta/core/Operations"
import { Effect, Option, Schema } from "effect"
import * as AgentCommands from "./AgentCommands.js"
import * as Answers from "./Answers.js"
import { agentToolCommand, call, callAndPrint, connection, withClient } from "./Connection.js"
import type { Connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as Views from "./Views.js"

const TurnId = Schema.String.pipe(Schema.pattern(/^t[1-9][0-9]*$/))

/** A fork once it is up: where it came from, then what `spawn` says of an agent. */
export const renderForked = (info: AgentInfo): string => {
  const from = info.forkedFrom
  const origin = from === undefined
    ? ""
    : `forked from ${from.agent}${from.turnId === null ? "" : ` at ${from.turnId}`}; `
  return `${origin}${AgentCommands.renderSpawned(info)}`
}

// A fork takes the source's options unless given others: `spawn`'s flags, but a session of its own (no --resume).
const { resume: _resume, ...forkOptions } = AgentCommands.spawnOptions

const fork = Command.make(
  "fork",
  {
    ...connection,
    ...forkOptions,
    at: Flags.checked("at", TurnId, { pseudoName: "turn", reason: "is not a turn id (t1, t2, ...)" }).pipe(
      Flags.optional(
        "The source's turn to cut at: the fork has the conversation up to and including it (default: the source's " +
          "last turn that succeeded)."
      )
    ),
    source: Flags.nameArgument("source", "The session to fork."),
    name: Flags.nameArgument("name", `The fork's name: ${Flags.NAME_RULE}.`)
  },
  (flags) =>
    Effect.gen(function*() {
      const { name, permission, ...options } = yield* AgentCommands.spawnArgs(flags.name, {
        ...flags,
        resume: Option.none()
      })
      // The source's permission stays unless a permission flag was given.
      const given = Option.isSome(flags.permission) || flags.allow.length > 0 || flags.ask.length > 0
      const args = {
        source: flags.source,
        name,
        ...options,
        ...(given ? { permission } : {}),
        ...(Option.isSome(flags.at) ? { at: flags.at.value } : {})
      }
      return yield* callAndPrint(flags, Operations.toolName("fork"), args, Answers.AgentInfo, renderForked)
    })
).pipe(
  Command.withDescription(
    "Start a new agent NAME whose conversation is SOURCE's up to a turn (--at; default its last turn that " +
      "succeeded), under a session of its own. It takes SOURCE's options unless given others; SOURCE goes on as " +
      "it was."
  )
)

/** A session's turn (`compact`, `clear`) to its end: the tool's bounded wait, then `wait`'s, until it is done. */
const turnToEnd = (flags: Connection, tool: string, args: Record<string, unknown>) =>
  withClient(
    flags,
    (client) =>
      call(client, tool, args, Answers.WaitResult).pipe(
        Effect.flatMap((first) =>
          first.done
            ? Effect.succeed(first)
            : AgentCommands.waitFor(client, { name: first.name, turnId: first.turnId! })
        )
      ),
    (answer) => renderSessionTurn(answer)
  )

/** What a compaction or a clear did, from the turn's result. */
export const renderSessionTurn = (answer: AgentCommands.WaitAnswer): string => {
  const result = answer.result
  if (result === undefined || "kind" in result) return answer.message
  const context = result.context === undefined ? "" : `; context now ${Views.describeContext(result.context)}`
  const compaction = result.compaction
  if (compaction !== undefined) {
    const after = compaction.postTokens === null ? "?" : compaction.postTokens.toLocaleString("en-US")
    return `compacted ${answer.name} (${compaction.trigger}): ${compaction.preTokens.toLocaleString("en-US")} → ` +
      `${after} tokens${context}`
  }
  return `${answer.name} starts a new conversation (session ${result.sessionId})${context}`
}

const compact = Command.make(
  "compact",
  {
    ...connection,
    name: Flags.nameArgument("name", "The session to compact."),
    instructions: Args.text({ name: "instructions" }).pipe(
      Args.withDescription("What the summary must keep (\"keep the open questions\")."),
      Args.optional
    )
  },
  (flags) =>
    turnToEnd(flags, Operations.toolName("compact"), {
      name: flags.name,
      timeoutSeconds: 45,
      ...(Option.isSome(flags.instructions) ? { instructions: flags.instructions.value } : {})
    })
).pipe(
  Command.withDescription(
    "Compact a session's conversation (its next turn is /compact) and print the tokens before and after. Past " +
      "`autoCompactAt` the fleet does it by itself."
  )
)

const clear = Command.make(
  "clear",
  { ...connection, name: Flags.nameArgument("name", "The session to clear.") },
  (flags) => turnToEnd(flags, Operations.toolName("clear"), { name: flags.name, timeoutSeconds: 45 })
).pipe(
  Command.withDescription(
    "Give a session a fresh conversation (its next turn is /clear): the same name, a new session, no memory of " +
      "what was said. Its transcript goes on."
  )
)

/** What `hibernate` did. */
export const renderHibernated = (v: typeof Answers.Hibernated.Type): string =>
  v.hibernated
    ? `${v.name} is hibernated: its process ended, its conversation is kept (a prompt or \`flotta wake\` wakes it)`
    : `${v.name} was hibernated already`

/** What `wake` did. */
export const renderWoken = (v: typeof Answers.Woken.Type): string =>
  v.woken
    ? `${v.name} is awake: ${v.info.pid === null ? "no process" : `pid ${v.info.pid}`} (session ${v.info.sessionId})`
    : `${v.name} was awake already (${v.info.status})`

const name = Flags.nameArgument("name", "The session's name.")

const hibernate = agentToolCommand({
  command: "hibernate",
  name,
  tool: Operations.toolName("hibernate"),
  answer: Answers.Hibernated,
  render: renderHibernated,
  description: "End an idle session's claude process and keep everything else: it shows as hibernated until a " +
    "prompt or `flotta wake` starts it again, with its memory. A session that is working cannot hibernate."
})

const wake = agentToolCommand({
  command: "wake",
  name,
  tool: Operations.toolName("wake"),
  answer: Answers.Woken,
  render: renderWoken,
  description: "Start a hibernated session's claude process again (it resumes its conversation), and print it " +
    "once it is up."
})

export const commands = [fork, compact, clear, hibernate, wake] as const
