/** Injection token of the process's pino Logger. */
export const LOGGER = Symbol('LOGGER');
