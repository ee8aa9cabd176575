import fc from 'fast-check'

/**
 * Property tests run with a fixed seed so `npm test` is deterministic; set FC_SEED to explore
 * other inputs (the failing seed is printed with every counterexample).
 */
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20261130) })
