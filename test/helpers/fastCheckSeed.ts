import fc from 'fast-check';

/**
 * Property tests run on a fixed seed so that `npm test` is deterministic; set FC_SEED to explore other cases
 * (a failure prints the seed and path that reproduce it).
 */
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20261123) });
