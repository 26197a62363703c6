/**
 * The few rxjs pieces callwire uses at run time, each from its own file: rxjs's package
 * entry in Node is a CommonJS index that loads all of its ~220 modules, which was a third of
 * a CLI process's start (bench/PROFILE.md "CLI start"). The classes are the same ones the
 * entry exports (it re-exports these files), so a caller's Observable is ours.
 */
export { Observable } from 'rxjs/internal/Observable';
export { Subject } from 'rxjs/internal/Subject';
export { Subscriber } from 'rxjs/internal/Subscriber';
export { isObservable } from 'rxjs/internal/util/isObservable';
export { filter } from 'rxjs/internal/operators/filter';
