// The fake Anthropic Messages API for integration tests that run the real `claude` CLI offline: a Promise
// facade over the shipped simulator: the server in packages/cli/src/Simulator.ts, the rules in SimulatorRules.ts.
import { ManagedRuntime } from "effect"
import * as fs from "node:fs"
import * as Simulator from "../../packages/cli/src/Simulator.js"
import type * as SimulatorRules from "../../packages/cli/src/SimulatorRules.js"

export type Usage = SimulatorRules.Usage
export type RecordedRequest = Simulator.RecordedRequest

export interface FakeMessagesApi {
  readonly url: string
  readonly port: number
  readonly requests: ReadonlyArray<RecordedRequest> // every read is a fresh snapshot
  close(): Promise<void>
}

export interface FakeMessagesApiOptions {
  readonly port?: number
  readonly usage?: Usage
  /** Input tokens as the request's own size: they grow with the conversation and drop after a compaction. */
  readonly measure?: boolean
}

// The simulator lives in its own runtime; close() disposes it, which stops the server and ends open streams.
export async function startFakeMessagesApi(options?: FakeMessagesApiOptions): Promise<FakeMessagesApi> {
  const runtime = ManagedRuntime.make(Simulator.layer(options))
  try {
    const simulator = await runtime.runPromise(Simulator.Simulator)
    return {
      url: simulator.url,
      port: simulator.port,
      get requests() {
        return simulator.requests()
      },
      close: () => runtime.dispose()
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}

// The environment of CLAUDE-CLI.md section 0: the CLI talks only to `api`, and all its state lives under `root`.
// `login: "subscription"` makes the CLI read the usage limiter's headers (tests of parking need it).
export function offlineEnv(
  api: { readonly url: string },
  root: string,
  login: Simulator.Login = "api-key"
): Record<string, string> {
  const { dirs, env } = Simulator.offlineLayout(api.url, root, login)
  for (const dir of dirs) fs.mkdirSync(dir, { recursive: true })
  return env
}
