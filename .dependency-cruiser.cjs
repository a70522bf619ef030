// The import rules of `npm run lint`: the package direction below, and the import-cycle check: the house is a tower, so no module may reach itself through its
// imports. Type-only imports and dynamic `import()` count too: a cycle through them still ties the
// modules into one knot (the Store ⇄ Agent and Otlp ⇄ internal/otlpSdk were such cycles).
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "an import cycle: move what both sides need to a module below them",
      from: {},
      to: { circular: true }
    },
    // The package direction (ARCHITECTURE.md, "Packages"). Only src is held to it: tests and benchmarks
    // (packages/*/test, test/, bench/, scripts/) compose packages as a user would, and may import any of them.
    {
      name: "core-imports-no-package",
      severity: "error",
      comment: "core is the bottom of the house: it imports no other package of ours (they contribute through Http)",
      from: { path: "^packages/core/src/" },
      to: { path: "^packages/(?!core/)[^/]+/" }
    },
    {
      name: "only-flotta-imports-cli",
      severity: "error",
      comment: "cli composes the layers; only the flotta package (what users install) builds on it",
      from: { path: "^packages/(?!cli/|flotta/)[^/]+/src/" },
      to: { path: "^packages/cli/" }
    },
    {
      name: "only-cli-imports-dashboard",
      severity: "error",
      comment: "the dashboard is composed by cli alone; a package shows itself there by contributing a panel",
      from: { path: "^packages/(?!dashboard/|cli/)[^/]+/src/" },
      to: { path: "^packages/dashboard/" }
    },
    {
      name: "dashboard-imports-only-core",
      severity: "error",
      comment:
        "the dashboard shows what packages contribute (Http.Contributions) and imports none of them; the scheduler " +
        "is the one exception left: its schedule page and steering actions are still the dashboard's own",
      from: { path: "^packages/dashboard/src/" },
      to: { path: "^packages/(?!core/|dashboard/|scheduler/)[^/]+/" }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "a relative or @flotta/* import the cycle check cannot follow (a cycle through it would go unseen)",
      from: {},
      to: { couldNotResolve: true, path: "^([.]|@flotta/|flotta$)" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/|^bench/out/" },
    // Type-only imports are dependencies too.
    tsPreCompilationDeps: true,
    // @flotta/* resolves to the sources (see tsconfig.depcruise.json); relative `.js` imports find their `.ts`.
    tsConfig: { fileName: "tsconfig.depcruise.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"]
    },
    skipAnalysisNotInRules: true,
    reporterOptions: { text: { highlightFocused: true } }
  }
}
