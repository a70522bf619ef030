/**
 * One MCP tool, as data: its name, title, description, hints, input and output schemas, and its handler, an
 * Effect on the `Flotta` service. `make` builds one from Effect Schemas. Nothing here knows the SDK's server:
 * `ToolBridge` puts tools on one.
 */
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import type { StandardSchemaWithJSON, ToolAnnotations } from "@modelcontextprotocol/server"
import { Effect } from "effect"
import type { Schema } from "effect"
import * as Standard from "./internal/standardSchema.js"

/** What a handler can do besides computing its result. */
export interface ToolContext {
  /** A progress notification, when the client asked for them (`_meta.progressToken`); never fails. */
  readonly progress: (message: string, progress: number, total?: number) => Effect.Effect<void>
}

/** A handler's typed failure: the engine's errors, and the tools' own, as a tag and a message. */
export interface Failure {
  readonly _tag: string
  readonly message: string
}

export interface Tool {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly annotations: ToolAnnotations
  readonly inputSchema: StandardSchemaWithJSON
  readonly outputSchema: StandardSchemaWithJSON
  /** The handler; `args` were validated against `inputSchema` before it runs. */
  readonly call: (args: unknown, ctx: ToolContext) => Effect.Effect<unknown, Failure, Flotta>
}

/** A tool from Effect Schemas: input validation is strict, output tolerates extra fields (see standardSchema). */
export const make = <I, IE, O, OE>(spec: {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly annotations: Omit<ToolAnnotations, "title">
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  readonly run: (args: I, ctx: ToolContext) => Effect.Effect<O, Failure, Flotta>
}): Tool => ({
  name: spec.name,
  title: spec.title,
  description: spec.description,
  annotations: { title: spec.title, ...spec.annotations },
  inputSchema: Standard.input(spec.input) as StandardSchemaWithJSON,
  outputSchema: Standard.output(spec.output) as StandardSchemaWithJSON,
  // One span per call, named for the tool; the SDK validated `args` against `inputSchema` already.
  call: Effect.fn(`mcp.${spec.name}`, { attributes: { "mcp.tool": spec.name }, captureStackTrace: false })(
    function*(args: unknown, ctx: ToolContext) {
      return yield* spec.run(args as I, ctx)
    }
  )
})

/**
 * A tool that is an operation of the table as it is: its name, description, input and output are the operation's,
 * and it runs the operation's method. The tool adds only its own: its title and hints.
 */
export const fromOperation = (name: Operations.FunctionName & Parameters<typeof Operations.toolName>[0], spec: {
  readonly title: string
  readonly annotations: Omit<ToolAnnotations, "title">
}): Tool => {
  const op: Operations.Any = Operations.operations[name]
  return make({
    name: Operations.toolName(name),
    title: spec.title,
    description: op.description,
    annotations: spec.annotations,
    input: op.input,
    output: op.output,
    run: (args: unknown) =>
      Effect.flatMap(
        Flotta,
        // The operation's typed failures are its error Schema's members: tagged errors, each with a message.
        (fleet) => Operations.invoke(fleet, name, args) as Effect.Effect<unknown, Failure>
      )
  })
}
