/** Test support: the dashboard served on a free port over a fleet, for the tests that speak HTTP to it. */
import { Flotta } from "@flotta/core/Flotta"
import { Context, Effect, Layer, Option } from "effect"
import * as Dashboard from "../src/Dashboard.js"
import type * as DashboardConfig from "../src/DashboardConfig.js"

/** The dashboard over `fleet`, built in the test's scope on a free port: its origin and the fleet. */
export const serveOver = <E>(fleet: Layer.Layer<Flotta, E>, config: DashboardConfig.DashboardConfigInput = {}) =>
  Layer.build(Dashboard.layer({ port: 0, ...config }).pipe(Layer.provideMerge(fleet))).pipe(
    Effect.map((context) => ({
      base: new URL(Option.getOrThrow(Context.get(context, Dashboard.Dashboard).url)).origin,
      fleet: Context.get(context, Flotta)
    }))
  )
