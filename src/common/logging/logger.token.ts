export const LOGGER = Symbol('LOGGER');
/** SERVICE_REQUEST_LOG: false logs only the requests answered 5xx (the relay logs all). */
export const EVERY_REQUEST_LOGGED = Symbol('EVERY_REQUEST_LOGGED');
