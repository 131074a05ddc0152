"""The phases of a deal, one module each: its legal actions, its reasons for refusing an
action, and where each action leads.

A deal flows through them in this order, each module starting the next: ``ask`` (the
redeal questions), ``blind`` and ``auction``, ``talon`` (with ``sale`` for the Estonian
sale and the re-buy), ``exchange``, ``contract`` (and the trump named after the talon)
and ``play``, whose last trick hands the deal to the scoring stages
(:mod:`arena.engine.scoring`).  :mod:`.base` holds what all of them share.  The game
(:class:`arena.engine.game.Game`) dispatches every decision to the phase object of the
phase it is in, from one table.
"""
