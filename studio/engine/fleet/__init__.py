"""From one replica to a fleet: a day of traffic (:mod:`.traffic`), the highest rate one replica
holds a p99 SLO at (:mod:`.replica`), the power it draws (:mod:`.power`) and the replicas, cost and
energy of every slot of the day (:mod:`.plan`). The service layer's :mod:`studio.service.fleet`
puts them together for the command line, the Fleet view and the report; see docs/fleet.md."""
