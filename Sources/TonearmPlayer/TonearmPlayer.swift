// Module TonearmPlayer.
