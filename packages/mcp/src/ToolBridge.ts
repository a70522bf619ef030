/**
 * The bridge between a table of tools and an SDK `McpServer`: `register` declares each tool (the SDK validates
 * arguments against its input schema before the handler runs, and results against its output schema), and
 * `execute` runs a handler (in its span, see `Tool.make`) on a Runtime captured when the server's layer was built. The client's cancellation
 * (the request's abort signal) interrupts the handler; a typed failure becomes an `isError` result with advice;
 * a defect is logged and answered as an internal error, never thrown at the SDK.
 */
import type { Flotta } from "@flotta/core/Flotta"
import type { CallToolResult, McpServer as SdkServer, ServerContext } from "@modelcontextprotocol/server"
import { Cause, Effect, Exit, Runtime } from "effect"
import { toolContext } from "./internal/progress.js"
import { errorResult, successResult } from "./internal/toolResult.js"
import type { Tool } from "./Tool.js"

/** Runs one call of a tool to its result. Never rejects. */
export type Execute = (tool: Tool, args: unknown, ctx: ServerContext) => Promise<CallToolResult>

/** Runs tool calls on `runtime`: the value, the typed failure, or (for a bug) an internal error. */
export const execute = (runtime: Runtime.Runtime<Flotta>): Execute => {
  const runExit = Runtime.runPromiseExit(runtime)
  const runFork = Runtime.runFork(runtime)
  return (tool, args, ctx) =>
    runExit(
      tool.call(args, toolContext(ctx)),
      { signal: ctx.mcpReq.signal }
    ).then((exit) => {
      if (Exit.isSuccess(exit)) return successResult(exit.value)
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some") return errorResult(failure.value)
      if (Cause.isInterruptedOnly(exit.cause)) {
        return errorResult({ _tag: "Cancelled", message: `${tool.name} was cancelled by the client` })
      }
      runFork(Effect.logError(`MCP tool ${tool.name} failed unexpectedly`, exit.cause))
      return errorResult({
        _tag: "InternalError",
        message: `${tool.name} failed unexpectedly: ${Cause.pretty(exit.cause).split("\n")[0]}. ` +
          "This is a bug in flotta; the fleet itself is unaffected"
      })
    })
}

/** Declares the tools on a fresh SDK server, each answered through `run`. */
export const register = (server: SdkServer, run: Execute, tools: ReadonlyArray<Tool>) => {
  for (const tool of tools) {
    server.registerTool(tool.name, {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: tool.outputSchema,
      annotations: tool.annotations
    }, (args: unknown, ctx: ServerContext) => run(tool, args, ctx))
  }
}
