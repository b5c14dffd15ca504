// Module TonearmSession.
