/**
 * Human approvals over MCP: `flotta_approvals` lists the tool calls waiting for a person (an agent whose
 * permission has `ask` tools, or is `"ask"`), and `flotta_decide` allows or denies one. A decision taken here is
 * recorded as decided by `mcp`, unless the caller names its own surface (the flotta command says `cli`). A decision on an approval that is no longer pending (it expired, its turn ended,
 * or someone decided it first) is `ApprovalExpired`; an unknown id is `ApprovalNotFound`.
 */
import { Surface } from "@flotta/core/Approvals"
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import { Effect, Schema } from "effect"
import * as S from "./Schemas.js"
import * as Tool from "./Tool.js"

// Hints (see Tools.ts): listing is read-only; a decision lets the agent's write or command run (or stops it),
// so hosts that confirm destructive tools put it to their own human first.
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const DECIDES = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } as const

/** What `decidedBy` says for a decision taken through these tools. */
export const DECIDED_BY = "mcp"

const Text = Schema.String.pipe(Schema.minLength(1))
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  jsonSchema: { type: "object", additionalProperties: true }
})

const describe = <A extends Schema.Schema.Any>(schema: A, description: string) =>
  schema.annotations({ description }) as A

// --- arguments ---------------------------------------------------------------------------------------------

export const ApprovalsArgs = Schema.Struct({
  agent: S.opt(Text, "Only this agent's (or run's) approvals"),
  all: S.opt(
    Schema.Boolean,
    "Also the approvals that ended lately (allowed, denied, expired), newest first after the pending ones"
  )
})

export const DecideArgs = Schema.Struct({
  id: S.req(Text, "The approval's id, from flotta_approvals (e.g. \"ap_k3j9x2ab\")"),
  behavior: S.req(
    Schema.Literal("allow", "deny"),
    "allow: the tool call runs; deny: it does not, and the model is told so (with `message`)"
  ),
  message: S.opt(Text, "Why: on a deny the model sees it; on an allow it is only recorded"),
  updatedInput: S.opt(JsonObject, "On an allow: the input the tool runs with instead of the one asked for"),
  always: S.opt(
    Schema.Boolean,
    "On an allow: also allow this tool for the rest of the agent's life, without asking again"
  ),
  by: S.opt(
    Surface,
    `Where the human decided, for the record (default "${DECIDED_BY}"; the flotta command passes "cli")`
  )
})

// --- results ------------------------------------------------------------------------------------------------

const Iso = describe(Schema.String, "An instant, ISO 8601 in UTC")

export const ApprovalView = Schema.Struct({
  id: Schema.String,
  agent: describe(Schema.String, "The agent (or run) whose tool call waits"),
  turnId: Schema.NullOr(Schema.String),
  tool: describe(Schema.String, "The tool it wants to use, e.g. Write or Bash"),
  input: describe(JsonObject, "The tool's input, as the model gave it"),
  requestedAt: Iso,
  expiresAt: describe(Iso, "When it ends as a deny if nobody decides"),
  status: Schema.Literal("pending", "allowed", "denied", "expired"),
  decidedAt: Schema.NullOr(Iso),
  decidedBy: describe(
    Schema.NullOr(Schema.String),
    "Who or what ended it: mcp, cli, api, ... or timeout, interrupted, closed, crashed, withdrawn, host_restart"
  ),
  message: Schema.NullOr(Schema.String)
})

// --- tools --------------------------------------------------------------------------------------------------

export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: Operations.toolName("approvals"),
    title: "Pending approvals",
    description: "The tool calls waiting for a human's decision, oldest first: each agent whose permission asks " +
      "about a tool (its `ask` list, or \"ask\") stops there, with status waiting_approval, until someone calls " +
      "flotta_decide or the approval expires (a deny). `all` adds the ones that ended lately. Also readable as " +
      "the resource flotta://approvals.",
    annotations: READ,
    input: ApprovalsArgs,
    output: Schema.Struct({ approvals: Schema.Array(ApprovalView) }),
    run: ({ agent, all }) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) =>
          fleet.approvals({ ...(agent === undefined ? {} : { agent }), ...(all === undefined ? {} : { all }) })),
        (approvals) => ({ approvals })
      )
  }),
  Tool.make({
    name: Operations.toolName("decide"),
    title: "Decide an approval",
    description: "Allow or deny a pending approval (ids from flotta_approvals): the waiting tool call runs, or " +
      "is refused and the model sees `message`. `always` also allows that tool for the rest of the agent's " +
      "life. Returns the decided approval. One that is no longer pending (expired, ended with its turn, decided " +
      "already) is ApprovalExpired.",
    annotations: DECIDES,
    input: DecideArgs,
    output: ApprovalView,
    run: ({ always, behavior, by, id, message, updatedInput }) =>
      Effect.flatMap(Flotta, (fleet) =>
        fleet.decide(id, {
          behavior,
          by: by ?? DECIDED_BY,
          ...(message === undefined ? {} : { message }),
          ...(updatedInput === undefined ? {} : { updatedInput }),
          ...(always === undefined ? {} : { always })
        }))
  })
]
