/**
 * The API's global guards (`CanActivate[]`), in the order Nest runs them: for a route that runs
 * them itself instead of through Nest's route pipeline.
 */
export const API_GUARDS = Symbol('API_GUARDS');
