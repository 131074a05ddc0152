"""The vocabulary of one match, below the bots and the referee that both speak it.

* :mod:`arena.match.types` - match specs, time controls, decision requests, seats, results;
* :mod:`arena.match.fallback` - the action the referee plays for a seat that did not
  answer well, which bots also use as their own choice of last resort.
* :mod:`arena.match.command` - the ``cmd:COMMAND`` reference of a bot program, which a
  tournament spec checks without the program's seat (:mod:`arena.stdio`).

The built-in bots (:mod:`arena.bots`) and the referee (:mod:`arena.referee`, which
resolves bot names through the bots' registry) both import from here, so neither imports
the other's package in both directions. Nothing is imported here, so a transport can use
the types without loading the engine.
"""
