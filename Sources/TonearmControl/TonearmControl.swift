// Module TonearmControl.
